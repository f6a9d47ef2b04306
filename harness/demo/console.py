"""`cronpilot demo --serve`: the HTTP API and its web console on the demo's database, on
127.0.0.1, with a token of each scope made for it, so that the demo can be watched."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from cronpilot.adapters.bootstrap import build_api, build_waker, token_authenticator
from cronpilot.adapters.cli.identity import actor
from cronpilot.adapters.settings import Settings
from cronpilot.domain.access.access import Scope
from cronpilot.domain.ports import Clock, Store
from cronpilot.usecases.access import create_token

HOST = "127.0.0.1"
SHOWN_SCOPES = (Scope.ADMIN, Scope.READ)


@dataclass(frozen=True, slots=True)
class DemoConsole:
    url: str
    secrets: dict[Scope, str]
    served: asyncio.Task[None]

    def lines(self) -> list[str]:
        tokens = [f"  {scope} token: {self.secrets[scope]}" for scope in SHOWN_SCOPES]
        return [f"console: {self.url}/console/ (sign in with a token below)", *tokens]

    async def closed(self) -> None:
        """Wait until the server stops: Ctrl-C."""
        await asyncio.shield(self.served)


@asynccontextmanager
async def demo_console(
    settings: Settings, store: Store, clock: Clock, port: int
) -> AsyncIterator[DemoConsole]:
    """Serve the API and the console on `HOST:port` (0: a free port) until the block ends or
    the server is interrupted (uvicorn handles Ctrl-C while it serves, then passes it on)."""
    import uvicorn

    secrets = {}
    for scope in SHOWN_SCOPES:
        _, secrets[scope] = await create_token(
            store.unit_of_work, f"demo-{scope}", scope, actor(), clock.now()
        )
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, port))
    sock.listen()
    waker = build_waker(settings)
    app = build_api(settings, store, waker, clock, token_authenticator(store, clock))
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, lifespan="off"))
    served = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield DemoConsole(f"http://{HOST}:{sock.getsockname()[1]}", secrets, served)
    finally:
        server.should_exit = True
        await served
        sock.close()
        await waker.close()
