"""`GET /search`: ranked endpoints with their parts, and bad queries as 4xx problems."""

from __future__ import annotations

import pytest

from cronpilot.domain.access.access import Scope
from cronpilot.domain.ports import SecretCipher
from tests.integration.api.conftest import JOBS, Api, served_api


async def test_search_ranks_the_endpoints_and_explains_the_blend(api: Api) -> None:
    async with api.client() as client:
        await client.post("/apply", content=JOBS)
    async with api.client(Scope.READ) as reader:
        answer = await reader.get("/search", params={"q": "current prices", "limit": 1})

    assert answer.status_code == 200
    body = answer.json()
    assert [hit["endpoint"] for hit in body["items"]] == ["shop/prices"]
    assert set(body["weights"]) == {"alpha", "semantic", "lexical", "graph", "density"}
    assert body["notes"] == []


async def test_a_word_the_catalog_lacks_is_matched_by_meaning_and_shown(api: Api) -> None:
    async with api.client() as client:
        await client.post("/apply", content=JOBS)
    async with api.client(Scope.READ) as reader:
        answer = await reader.get("/search", params={"q": "what does it cost", "limit": 1})

    body = answer.json()
    assert [hit["endpoint"] for hit in body["items"]] == ["shop/prices"]
    assert body["items"][0]["lexical"] > 0
    [(word, [related])] = body["related"].items()
    assert (word, related["word"]) == ("cost", "price") and related["similarity"] >= 0.28


@pytest.mark.parametrize(
    ("params", "status", "says"),
    [
        ({"q": ""}, 422, "query.q: empty"),
        ({"q": " "}, 422, "query.q: empty"),
        ({"q": "x" * 10_000}, 400, "at most 500"),
        ({"q": "価格はいくら"}, 400, "script"),
        ({"q": "prices", "job": "nope"}, 404, "no job 'nope'"),
        ({"q": "prices", "limit": 0}, 422, ""),
    ],
)
async def test_a_bad_query_is_a_problem(
    api: Api, params: dict[str, object], status: int, says: str
) -> None:
    async with api.client(Scope.READ) as reader:
        answer = await reader.get("/search", params=params)
    assert answer.status_code == status
    assert answer.headers["content-type"] == "application/problem+json"
    assert says in answer.json()["detail"]


async def test_without_a_reachable_embedding_model_the_answer_says_it_fell_back(
    sql_url: str, cipher: SecretCipher
) -> None:
    # Nothing listens on port 9 of the loopback: the connection is refused at once.
    unreachable = {
        "search_embedder": "openai",
        "search_embeddings_base_url": "http://127.0.0.1:9/v1",
    }
    async with served_api(sql_url, cipher, **unreachable) as api:
        async with api.client() as client:
            await client.post("/apply", content=JOBS)
        async with api.client(Scope.READ) as reader:
            answer = await reader.get("/search", params={"q": "current prices", "limit": 1})

    assert answer.status_code == 200
    body = answer.json()
    assert [hit["endpoint"] for hit in body["items"]] == ["shop/prices"]
    [note] = body["notes"]
    assert "embeddings server" in note and "ranked by lexical and graph scores only" in note
