"""schemathesis against the served /openapi.json: every operation, valid and invalid input;
no 500, and every error a problem document."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode

from cronpilot.adapters.bootstrap import build_api, token_authenticator
from cronpilot.adapters.sql import open_sql_store, upgrade_database
from cronpilot.adapters.wake import InProcessWaker
from cronpilot.domain.access import Scope
from cronpilot.domain.ports import SecretCipher
from tests.api.conftest import JOBS, bearer, issue_tokens, loopback_server
from tests.support.clock import FakeClock
from tests.support.settings import settings_for_tests

EXAMPLES = 8
"""Per operation and mode: about 30 operations in well under a minute."""


@pytest.fixture
def served(tmp_path: Path, cipher: SecretCipher) -> Iterator[tuple[str, str]]:
    """The API on SQLite, served from a thread of its own (schemathesis calls synchronously),
    and an admin token's secret."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'api.db'}"
    asyncio.run(upgrade_database(url))
    opened = threading.Event()
    holder: dict[str, Any] = {}

    async def main() -> None:
        store = await open_sql_store(url, cipher)
        waker = InProcessWaker()
        clock = FakeClock()
        secrets = await issue_tokens(store, clock)
        authenticate = token_authenticator(store, clock)
        app = build_api(settings_for_tests(database_url=url), store, waker, clock, authenticate)
        server, sock = loopback_server(app)
        holder.update(server=server, port=sock.getsockname()[1], admin=secrets[Scope.ADMIN])
        opened.set()
        try:
            await server.serve(sockets=[sock])
        finally:
            sock.close()
            await waker.close()
            await store.close()

    thread = threading.Thread(target=asyncio.run, args=(main(),))
    thread.start()
    # Set once the store is open and the socket listens: requests queue until it serves.
    assert opened.wait(30)
    base = f"http://127.0.0.1:{holder['port']}"
    httpx.post(f"{base}/apply", content=JOBS, headers=bearer(holder["admin"])).raise_for_status()
    try:
        yield base, holder["admin"]
    finally:
        holder["server"].should_exit = True
        thread.join(30)


def _check(case: schemathesis.Case, base: str, secret: str) -> None:
    response = case.call(base_url=base, headers=bearer(secret))
    where = f"{case.method} {case.formatted_path}"
    assert response.status_code < 500, f"{where}: {response.status_code} {response.text}"
    if response.status_code >= 400:
        assert response.headers["content-type"] == ["application/problem+json"], where
        problem = response.json()
        assert {"type", "title", "status", "detail"} <= problem.keys(), where
        assert problem["status"] == response.status_code, where


def test_every_operation_answers_without_500_and_errors_are_problems(
    served: tuple[str, str],
) -> None:
    base, secret = served
    schema = schemathesis.openapi.from_url(f"{base}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 25
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=EXAMPLES,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            def check(case: schemathesis.Case) -> None:
                _check(case, base, secret)

            check()
