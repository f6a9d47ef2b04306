"""A database that cannot be reached, and a bug: still problem documents, no traceback."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from cronpilot.adapters.bootstrap import build_api, token_authenticator
from cronpilot.adapters.wake import InProcessWaker
from cronpilot.domain.access.access import Scope
from cronpilot.domain.errors import StoreUnavailable
from cronpilot.domain.ports import ReadingUnit
from tests.integration.api.conftest import bearer, issue_tokens
from tests.support.clock import FakeClock
from tests.support.loopback import served_asgi
from tests.support.memory_store import MemoryStore
from tests.support.settings import settings_for_tests


class BrokenStore(MemoryStore):
    """Reads fail as `failure` says: the database gone, or a bug."""

    def __init__(self) -> None:
        super().__init__()
        self.failure: Exception = StoreUnavailable("connection refused (127.0.0.1:5432)")

    def reading(self) -> ReadingUnit:
        raise self.failure


@pytest.fixture
async def broken() -> AsyncIterator[tuple[BrokenStore, str, str]]:
    store = BrokenStore()
    waker = InProcessWaker()
    clock = FakeClock()
    secrets = await issue_tokens(store, clock)
    app = build_api(settings_for_tests(), store, waker, clock, token_authenticator(store, clock))
    try:
        async with served_asgi(app) as url:
            yield store, url, secrets[Scope.READ]
    finally:
        await waker.close()


async def test_an_unreachable_database_is_503_and_a_bug_500(
    broken: tuple[BrokenStore, str, str],
) -> None:
    store, url, secret = broken
    async with httpx.AsyncClient(base_url=url, headers=bearer(secret)) as client:
        unavailable = await client.get("/jobs")
        assert unavailable.status_code == 503
        assert unavailable.headers["content-type"] == "application/problem+json"
        assert unavailable.json()["detail"] == "connection refused (127.0.0.1:5432)"

        store.failure = RuntimeError("secret internals")
        crashed = await client.get("/jobs")
        assert crashed.status_code == 500
        assert crashed.headers["content-type"] == "application/problem+json"
        assert "secret internals" not in crashed.text
