"""The API served by uvicorn on a free loopback port, over a real SQL store, with an in-test
token check: `read-secret`, `write-secret`, `admin-secret` carry those scopes."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from cronpilot.adapters.bootstrap import build_api
from cronpilot.adapters.sql import open_sql_store
from cronpilot.adapters.wake import InProcessWaker
from cronpilot.domain.access import Principal, Scope, token_actor
from cronpilot.domain.ports import SecretCipher, Store
from tests.support.clock import FakeClock
from tests.support.settings import settings_for_tests

TOKENS = {f"{scope}-secret": Principal(token_actor(f"{scope}-bot"), scope) for scope in Scope}

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


async def authenticate(secret: str) -> Principal | None:
    return TOKENS.get(secret)


def bearer(scope: Scope) -> dict[str, str]:
    return {"Authorization": f"Bearer {scope}-secret"}


def loopback_server(app: FastAPI) -> tuple[uvicorn.Server, socket.socket]:
    """A server for `app` and its socket on a free loopback port (`server.serve(sockets=…)`).
    The socket listens from here on: a client may connect before the server has started, the
    backlog holds it, so nobody waits for the server to say it is up."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    config = uvicorn.Config(app, log_config=None, lifespan="off")
    return uvicorn.Server(config), sock


@dataclass
class Api:
    url: str
    store: Store
    clock: FakeClock

    def client(self, scope: Scope | None = Scope.ADMIN) -> httpx.AsyncClient:
        headers = {} if scope is None else bearer(scope)
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=10)


@pytest.fixture
async def api(sql_url: str, cipher: SecretCipher) -> AsyncIterator[Api]:
    store = await open_sql_store(sql_url, cipher)
    waker = InProcessWaker()
    clock = FakeClock()
    app = build_api(settings_for_tests(database_url=sql_url), store, waker, clock, authenticate)
    server, sock = loopback_server(app)
    port = sock.getsockname()[1]
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield Api(f"http://127.0.0.1:{port}", store, clock)
    finally:
        server.should_exit = True
        await task
        sock.close()
        await waker.close()
        await store.close()
