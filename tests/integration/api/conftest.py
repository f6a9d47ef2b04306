"""The API served by uvicorn on a free loopback port, over a real SQL store, with real tokens
made by the tokens' use case: `read-bot`, `write-bot` and `admin-bot` carry those scopes."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from cronpilot.adapters.bootstrap import build_api, token_authenticator
from cronpilot.adapters.sql import open_sql_store
from cronpilot.adapters.wake import InProcessWaker
from cronpilot.domain.access.access import Scope
from cronpilot.domain.ports import Clock, SecretCipher, Store
from cronpilot.usecases.access import create_token
from tests.support.clock import FakeClock
from tests.support.loopback import loopback_server, served_asgi
from tests.support.settings import settings_for_tests

JOBS = """
jobs:
  - name: shop
    description: the shop
    endpoints:
      - name: stock
        url: https://example.com/stock
        interval: 60s
      - name: prices
        url: https://example.com/prices
        depends_on: [stock]
"""


Secrets = dict[Scope, str]
"""The secret of each scope's token."""


async def issue_tokens(store: Store, clock: Clock) -> Secrets:
    """A token of each scope, `SCOPE-bot`, as `cronpilot tokens create` makes them."""
    secrets = {}
    for scope in Scope:
        _, secret = await create_token(
            store.unit_of_work, f"{scope}-bot", scope, "cli:test@host", clock.now()
        )
        secrets[scope] = secret
    return secrets


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


@dataclass
class Api:
    url: str
    store: Store
    clock: FakeClock
    secrets: Secrets

    def client(self, scope: Scope | None = Scope.ADMIN) -> httpx.AsyncClient:
        headers = {} if scope is None else bearer(self.secrets[scope])
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=10)


@contextlib.asynccontextmanager
async def served_api(sql_url: str, cipher: SecretCipher, **settings: Any) -> AsyncIterator[Api]:
    """The API on `sql_url`, with `settings` over the tests' own."""
    store = await open_sql_store(sql_url, cipher)
    waker = InProcessWaker()
    clock = FakeClock()
    secrets = await issue_tokens(store, clock)
    authenticate = token_authenticator(store, clock)
    chosen = settings_for_tests(database_url=sql_url, **settings)
    app = build_api(chosen, store, waker, clock, authenticate)
    try:
        async with served_asgi(app) as url:
            yield Api(url, store, clock, secrets)
    finally:
        await waker.close()
        await store.close()


@pytest.fixture
async def api(sql_url: str, cipher: SecretCipher) -> AsyncIterator[Api]:
    async with served_api(sql_url, cipher) as serving:
        yield serving


@pytest.fixture
def served(sqlite_url: str, cipher: SecretCipher) -> Iterator[tuple[str, str]]:
    """The API on SQLite, served from a thread of its own (schemathesis calls synchronously),
    and an admin token's secret."""
    opened = threading.Event()
    holder: dict[str, Any] = {}

    async def main() -> None:
        store = await open_sql_store(sqlite_url, cipher)
        waker = InProcessWaker()
        clock = FakeClock()
        secrets = await issue_tokens(store, clock)
        authenticate = token_authenticator(store, clock)
        app = build_api(
            settings_for_tests(database_url=sqlite_url), store, waker, clock, authenticate
        )
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
