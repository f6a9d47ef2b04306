"""JSON that PostgreSQL's JSONB refuses ends a run the same way on SQLite and PostgreSQL: the
run finishes, with no body and the reason why, instead of staying `running` on one backend and
being stored on the other."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
from cronpilot.adapters.jsonvalue import check_storable, parse_storable
from cronpilot.adapters.sql import open_sql_store
from cronpilot.domain.model import BodyAbsence, HttpRequest, RunStatus
from cronpilot.domain.ports import SecretCipher
from tests.contract.builders import T0, add_endpoint, claim_one
from tests.support.finishing import finish_one
from tests.support.hostile_server import UNSTORABLE_JSON, HostileServer


@pytest.fixture
async def server() -> AsyncIterator[HostileServer]:
    async with HostileServer() as hostile:
        yield hostile


@pytest.mark.parametrize("case", sorted(UNSTORABLE_JSON))
async def test_unstorable_json_finishes_the_run_alike_on_every_backend(
    server: HostileServer, sql_url: str, cipher: SecretCipher, case: str
) -> None:
    dispatcher = AiohttpDispatcher(allowed_networks=["127.0.0.1/32"])
    store = await open_sql_store(sql_url, cipher)
    try:
        await add_endpoint(store, "j", "e", T0)
        claim = await claim_one(store, T0)
        request = HttpRequest("GET", server.url(f"/unstorable/{case}"), {}, None, 5.0, 100_000)
        response = await dispatcher.dispatch(request)

        await finish_one(store.claims, claim, "w1", response, T0)

        run = await store.runs.get_run(claim.run_id)
        endpoint = await store.catalog.get_endpoint(claim.endpoint.id)
    finally:
        await store.close()
        await dispatcher.close()

    assert (run.status, run.body, run.body_absence) == (
        RunStatus.SUCCESS,
        None,
        BodyAbsence.UNPARSABLE,
    )
    assert run.size_bytes == len(UNSTORABLE_JSON[case].encode())
    assert endpoint.lease_owner is None


@pytest.mark.parametrize(
    "value",
    [
        {"a": float("nan")},
        [1, float("-inf")],
        {"nested": {"deep": ["a\0"]}},
        {"\udfff": 1},
        {1: "a key that is not a string"},
        {"when": T0},
        {"set": {1, 2}},
    ],
)
def test_check_storable_refuses_what_a_store_could_not_keep(value: object) -> None:
    with pytest.raises(ValueError, match=r"^\$"):
        check_storable(value)


def test_storable_json_passes_unchanged() -> None:
    document = {"face": "\N{GRINNING FACE}", "n": [1, 2.5, -0.0, True, None], "e": {}}

    check_storable(document)
    assert parse_storable('{"face": "\\ud83d\\ude00", "big": 1e308}') == {
        "face": "\N{GRINNING FACE}",
        "big": 1e308,
    }
