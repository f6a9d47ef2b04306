"""`cronpilot search` end to end on the example jobs: the right endpoint among the first three
for plain-language questions, every part of a score in `--json`, bad input in one line, and a
search without an embedding model falling back to its lexical and graph legs (and saying so)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cronpilot.adapters.jobs_file import load_declarations
from cronpilot.adapters.search.embedders import WORDLLAMA_MODEL, WordLlamaEmbedder
from cronpilot.usecases.declarations import apply_declarations
from cronpilot.usecases.search import search_endpoints
from tests.e2e.conftest import Cli
from tests.e2e.test_admin_cli import one_error_line
from tests.integration.search.example_questions import EXAMPLE_QUESTIONS
from tests.support.memory_store.store import MemoryStore

EXAMPLE = Path(__file__).parents[2] / "adapters" / "examples" / "jobs.yaml"
SIMULATOR = {"SIMULATOR_URL": "http://127.0.0.1:9"}
T0 = datetime(2030, 1, 1, tzinfo=UTC)


@pytest.fixture
def examples(cli_for: Callable[..., Cli], sqlite_url: str) -> Cli:
    cli = cli_for(sqlite_url, CRONPILOT_ALLOWED_NETWORKS="127.0.0.0/8", **SIMULATOR)
    cli("apply", "-f", str(EXAMPLE))
    return cli


async def test_every_question_about_the_examples_finds_its_endpoint_in_the_top_three() -> None:
    # The use case `cronpilot search` calls, in process: one model load for all the questions.
    store = MemoryStore()
    declared = load_declarations(EXAMPLE, ["127.0.0.0/8"], SIMULATOR)
    await apply_declarations(store.unit_of_work, None, declared, "examples", actor="t", now=T0)
    embedder = WordLlamaEmbedder()
    missed = []
    for question, wanted in EXAMPLE_QUESTIONS:
        result = await search_endpoints(
            store.reading, embedder, question, uow=store.unit_of_work, now=T0, limit=3
        )
        found = [hit.ref for hit in result.hits]
        if wanted not in found:
            missed.append((question, wanted, found))
    assert missed == []
    # The first search embedded every endpoint once; the others read the stored vectors.
    assert len(await store.vectors.get_vectors(WORDLLAMA_MODEL)) == 15


def test_search_ranks_explains_and_stores_the_vectors(examples: Cli) -> None:
    table = examples("search", "poll the fraud score", "--limit", "3")
    assert "flash-sale/fraud_score" in table.stdout.splitlines()[1]
    assert "score = " in table.stderr and "semantic" in table.stderr
    # A word no endpoint uses is matched by the indexed words closest in meaning, and said so.
    table = examples("search", "suspicious purchases", "--limit", "1")
    assert "flash-sale/investigator" in table.stdout.splitlines()[1]
    assert "'purchase' is not indexed: the lexical leg matched sale 0.56" in table.stderr

    found = examples.json("search", "watch the queue depth", "--job", "queue", "--limit", "2")

    assert found[0]["endpoint"] == "queue/depth"
    assert {hit["endpoint"].split("/")[0] for hit in found} == {"queue"}
    first = found[0]
    weights = first["weights"]
    assert set(first) >= {"endpoint", "score", "semantic", "lexical", "graph", "weights"}
    assert weights["semantic"] + weights["lexical"] + weights["graph"] == pytest.approx(1, abs=0.01)
    assert first["score"] == pytest.approx(
        weights["semantic"] * first["semantic"]
        + weights["lexical"] * first["lexical"]
        + weights["graph"] * first["graph"],
        abs=0.01,
    )


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["   "], 2, "the query is empty"),
        (["x" * 10_000], 2, "at most 500"),
        (["где уровень мошенничества"], 2, "cyrillic script"),
        (["fraud", "--job", "nope"], 1, "no job 'nope'"),
    ],
)
def test_bad_input_is_one_clear_line(examples: Cli, args: list[str], code: int, says: str) -> None:
    done = examples("search", *args, expect=code)
    assert says in one_error_line(done.stderr)
    assert "Traceback" not in done.stderr


def test_without_a_reachable_embedding_model_search_falls_back_and_says_so(
    cli_for: Callable[..., Cli], sqlite_url: str
) -> None:
    cli = cli_for(
        sqlite_url,
        CRONPILOT_ALLOWED_NETWORKS="127.0.0.0/8",
        CRONPILOT_SEARCH_EMBEDDER="openai",
        # Nothing listens on port 9 of the loopback: the connection is refused at once.
        CRONPILOT_SEARCH_EMBEDDINGS_BASE_URL="http://127.0.0.1:9/v1",
        **SIMULATOR,
    )
    cli("apply", "-f", str(EXAMPLE))

    done = cli("search", "fraud score", "--json")

    assert "could not connect to the embeddings server" in done.stderr
    assert "ranked by lexical and graph scores only" in done.stderr
    assert '"endpoint": "flash-sale/fraud_score"' in done.stdout
