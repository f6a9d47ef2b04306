"""An HTTP server on 127.0.0.1 that misbehaves in every way an endpoint can.

It records what reached it (`hits`) and how much of the huge body it managed to send, so tests
can prove the client refused before connecting, or stopped reading early.
"""

from __future__ import annotations

import asyncio
import gzip
import socket
import struct

from aiohttp import web
from aiohttp.typedefs import Handler

from tests.support.loopback import LoopbackServer

HUGE_BYTES = 50 * 1024 * 1024
_CHUNK = b"[" + b"0," * 32_767 + b"0]"
BOMB_BYTES = 20 * 1024 * 1024
LONG_REASON = 8_000
_BOMB = gzip.compress(b"[" + b"0," * (BOMB_BYTES // 2 - 1) + b"0]")
"""20 MB of JSON that travels as about 20 KB of gzip."""

UNSTORABLE_JSON = {
    "nan": '{"score": NaN}',
    "infinity": '{"score": -Infinity}',
    "overflow": '{"score": 1e400}',
    "nul": '{"name": "a\\u0000b"}',
    "nul-key": '{"a\\u0000b": 1}',
    "lone-surrogate": '{"items": ["\\ud800"]}',
    "lone-surrogate-key": '{"\\udc00": true}',
}
"""Served at `/unstorable/{case}`: JSON that Python's `json` decodes but JSONB refuses."""


def unused_port() -> int:
    """A loopback port nothing listens on (bound, then released), for refused connections."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


class HostileServer(LoopbackServer):
    """Start with `async with HostileServer() as server:`; `server.url("/json")` is its address."""

    # Handlers stop when the client goes away: that is how the huge body sees the client
    # give up, and how a hanging handler ends with its caller's timeout.
    cancel_handlers = True
    shutdown_seconds = 1.0

    def __init__(self) -> None:
        self.hits: list[str] = []
        self.huge_bytes_written = 0
        self.huge_finished = asyncio.Event()

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._record])
        app.add_routes(
            [
                web.get("/json", self._json),
                web.get("/problem", self._problem),
                web.get("/fail", self._fail),
                web.get("/long-reason", self._long_reason),
                web.get("/html", self._html),
                web.get("/empty", self._empty),
                web.get("/invalid-json", self._invalid_json),
                web.get("/unstorable/{case}", self._unstorable),
                web.get("/huge", self._huge),
                web.get("/bomb", self._bomb),
                web.get("/hang", self._hang),
                web.get("/reset", self._reset),
                web.get("/redirect/{hops:\\d+}", self._redirect_chain),
                web.get("/loop", self._loop),
                web.route("*", "/redirect-to", self._redirect_to),
                web.route("*", "/echo", self._echo),
            ]
        )
        return app

    @web.middleware
    async def _record(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        self.hits.append(request.path_qs)
        response: web.StreamResponse = await handler(request)
        return response

    async def _json(self, request: web.Request) -> web.Response:
        return web.json_response({"ok": True, "items": [1, 2, 3]})

    async def _problem(self, request: web.Request) -> web.Response:
        problem = {"title": "invalid input", "status": 422}
        return web.json_response(problem, status=422, content_type="application/problem+json")

    async def _fail(self, request: web.Request) -> web.Response:
        return web.json_response({"error": "database down"}, status=500)

    async def _long_reason(self, request: web.Request) -> web.Response:
        # As long as aiohttp's client reads a status line (8,190 bytes).
        return web.json_response({}, status=503, reason="x" * LONG_REASON)

    async def _html(self, request: web.Request) -> web.Response:
        return web.Response(text="<html><body>hello</body></html>", content_type="text/html")

    async def _empty(self, request: web.Request) -> web.Response:
        return web.Response(body=b"", content_type="application/json")

    async def _invalid_json(self, request: web.Request) -> web.Response:
        return web.Response(text='{"ok": tru', content_type="application/json")

    async def _unstorable(self, request: web.Request) -> web.Response:
        text = UNSTORABLE_JSON[request.match_info["case"]]
        return web.Response(text=text, content_type="application/json")

    async def _huge(self, request: web.Request) -> web.StreamResponse:
        """50 MB of JSON array, produced lazily; `?declared=1` announces its length first."""
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        if request.query.get("declared"):
            response.content_length = HUGE_BYTES
        await response.prepare(request)
        try:
            while self.huge_bytes_written < HUGE_BYTES:
                chunk = _CHUNK[: HUGE_BYTES - self.huge_bytes_written]
                await response.write(chunk)
                self.huge_bytes_written += len(chunk)
        except ConnectionError:
            pass
        finally:
            self.huge_finished.set()
        return response

    async def _bomb(self, request: web.Request) -> web.Response:
        """Declares the compressed length, which is far under any cap."""
        return web.Response(
            body=_BOMB, content_type="application/json", headers={"Content-Encoding": "gzip"}
        )

    async def _hang(self, request: web.Request) -> web.Response:
        await asyncio.sleep(60)
        return web.json_response({"late": True})

    async def _reset(self, request: web.Request) -> web.Response:
        transport = request.transport
        assert transport is not None
        # Linger 0 makes close() send a TCP RST instead of an orderly FIN.
        sock = transport.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()
        await asyncio.sleep(60)
        return web.Response()

    async def _redirect_chain(self, request: web.Request) -> web.Response:
        hops = int(request.match_info["hops"])
        raise web.HTTPFound("/json" if hops == 0 else f"/redirect/{hops - 1}")

    async def _loop(self, request: web.Request) -> web.Response:
        raise web.HTTPFound("/loop")

    async def _redirect_to(self, request: web.Request) -> web.Response:
        """Redirect to `?url=` with `?status=` (302 by default), e.g. to a blocked address."""
        status = int(request.query.get("status", "302"))
        return web.Response(status=status, headers={"Location": request.query["url"]})

    async def _echo(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "method": request.method,
                "path": request.path_qs,
                "headers": dict(request.headers),
                "body": await request.text(),
            }
        )
