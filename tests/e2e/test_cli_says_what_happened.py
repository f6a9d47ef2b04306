"""Commands that say what happened: the request a run sent, what each tool call of a session
did, the interval in force, and exit codes and messages a user can act on."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from cronpilot.adapters.crypto import FernetCipher
from cronpilot.adapters.sql import open_sql_store
from cronpilot.domain.model import Response
from cronpilot.domain.ports import Store
from cronpilot.domain.sent_request import sent_request
from cronpilot.scheduler.requests import request_for
from tests.e2e.conftest import Cli
from tests.e2e.test_admin_cli import SECRET, bind, shop  # noqa: F401 (fixtures)
from tests.support.finishing import finish_one

T = TypeVar("T")


def _with_store(cli: Cli, url: str, action: Callable[[Store], Awaitable[T]]) -> T:
    """`action` on the CLI's database, with its key, as a worker would."""

    async def main() -> T:
        key = (cli.home / "secret.key").read_text(encoding="ascii").strip()
        store = await open_sql_store(url, FernetCipher(key))
        try:
            return await action(store)
        finally:
            await store.close()

    return asyncio.run(main())


def _run_orders(shop: Cli, sqlite_url: str, *, keep_request: bool) -> str:
    """A finished run of shop/orders as a worker records it (with the request it sent, or as
    an older cronpilot did, without); its id."""

    async def record(store: Store) -> str:
        later = datetime.now(UTC) + timedelta(days=2)
        claims = await store.claims.claim_due(later, "e2e-worker", 60, 10)
        [claim] = [claim for claim in claims if claim.endpoint.ref == "shop/orders"]
        sent = sent_request(request_for(claim)) if keep_request else None
        response = Response(status_code=200, body={"n": 1}, request=sent)
        return (await finish_one(store.claims, claim, "e2e-worker", response, later)).id

    return _with_store(shop, sqlite_url, record)


def test_runs_show_prints_the_request_sent_with_secrets_masked(shop: Cli, sqlite_url: str) -> None:
    run_id = _run_orders(shop, sqlite_url, keep_request=True)

    for_people = shop("runs", "show", run_id).stdout
    for_scripts = shop.json("runs", "show", run_id)

    assert "GET http://127.0.0.1:9/orders" in for_people
    assert "Authorization: ****" in for_people
    assert "Accept: application/json" in for_people
    assert f"X-Cronpilot-Run-Id: {run_id}" in for_people
    request = for_scripts["request"]
    assert (request["method"], request["url"], request["body"]) == (
        "GET",
        "http://127.0.0.1:9/orders",
        None,
    )
    assert request["headers"]["Authorization"] == "****"
    assert SECRET not in for_people + str(for_scripts)


def test_runs_show_of_a_run_recorded_without_its_request_says_so(
    shop: Cli, sqlite_url: str
) -> None:
    run_id = _run_orders(shop, sqlite_url, keep_request=False)

    for_people = shop("runs", "show", run_id).stdout

    assert "not recorded (runs recorded before cronpilot kept requests" in " ".join(
        for_people.split()
    )
    assert shop.json("runs", "show", run_id)["request"] is None
