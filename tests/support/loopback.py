"""The serving every test server shares, on a free loopback port: a hand-rolled aiohttp app
(`LoopbackServer`) or an ASGI app under uvicorn (the API, the console, MCP over HTTP)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import TracebackType
from typing import ClassVar, Literal, Self

import uvicorn
from aiohttp import web
from starlette.types import ASGIApp


def loopback_server(
    app: ASGIApp, lifespan: Literal["auto", "on", "off"] = "off"
) -> tuple[uvicorn.Server, socket.socket]:
    """A server for `app` and its socket on a free loopback port (`server.serve(sockets=…)`).
    The socket listens from here on: a client may connect before the server has started, the
    backlog holds it, so nobody waits for the server to say it is up."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    config = uvicorn.Config(app, log_config=None, lifespan=lifespan)
    return uvicorn.Server(config), sock


@asynccontextmanager
async def served_asgi(
    app: ASGIApp, lifespan: Literal["auto", "on", "off"] = "off"
) -> AsyncIterator[str]:
    """`app` served on this loop until the block ends; yields its base URL."""
    server, sock = loopback_server(app, lifespan)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await task
        sock.close()


class LoopbackServer:
    """Subclasses build their routes in `app()`; `cancel_handlers` cancels a handler when its
    client goes away (how a hanging or held handler ends with its caller's timeout)."""

    cancel_handlers: ClassVar[bool] = False
    shutdown_seconds: ClassVar[float] = 0.5
    port: int = 0
    _runner: web.AppRunner | None = None

    def app(self) -> web.Application:
        raise NotImplementedError

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def __aenter__(self) -> Self:
        runner = web.AppRunner(
            self.app(),
            handler_cancellation=self.cancel_handlers,
            access_log=None,
            shutdown_timeout=self.shutdown_seconds,
        )
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        self._runner = runner
        self.port = runner.addresses[0][1]
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
