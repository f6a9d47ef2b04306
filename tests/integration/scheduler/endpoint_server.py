"""A loopback endpoint for scheduler tests: answers JSON, counts calls per (endpoint, slot).

Paths: `/ok/{name}` answers at once, `/same/{name}` always the same body, `/stamped/{name}`
the same data with a time, a request id and a counter that change on each call, `/echo/{name}`
with the query parameters it was sent, `/slow/{name}?ms=N` after N ms, `/held/{name}` when the
test sets `release`, `/hang/{name}` never (until the caller gives up), `/fail/{name}` with 500.
`/answer/{name}?status=503&times=2&retry_after=5&next_run=30s` answers `status` (with that
`Retry-After`) to the first `times` calls (every call without `times`), 200 to the later ones,
and `Cronpilot-Next-Run: next_run` to every call. Every path takes POST as well as GET.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from datetime import datetime

from aiohttp import web
from multidict import CIMultiDict

from cronpilot.scheduler.requests import SLOT_HEADER
from tests.support.loopback import LoopbackServer


class EndpointServer(LoopbackServer):
    # A handler is cancelled when its caller goes away, so held and hanging calls end with
    # the client's timeout or shutdown instead of keeping the server busy.
    cancel_handlers = True

    def __init__(self) -> None:
        self.calls: Counter[tuple[str, str]] = Counter()
        """Calls received per (endpoint name, slot header)."""
        self.slots: defaultdict[str, list[datetime]] = defaultdict(list)
        """The slot of every call received, per endpoint name."""
        self.headers: defaultdict[str, list[CIMultiDict[str]]] = defaultdict(list)
        """The request headers of every call received, per endpoint name."""
        self.in_flight = 0
        self.max_in_flight = 0
        self.release = asyncio.Event()
        self._arrived = asyncio.Event()

    def calls_of(self, name: str) -> int:
        return len(self.slots[name])

    async def until(self, condition: Callable[[], bool]) -> None:
        """Wait until `condition()` holds, checking as calls arrive (bound it with
        `asyncio.timeout`)."""
        while not condition():
            self._arrived.clear()
            await self._arrived.wait()

    async def until_calls(self, name: str, count: int = 1) -> None:
        await self.until(lambda: self.calls_of(name) >= count)

    async def until_in_flight(self, count: int) -> None:
        await self.until(lambda: self.in_flight >= count)

    def app(self) -> web.Application:
        app = web.Application()
        app.add_routes(
            [web.get("/{kind}/{name}", self._answer), web.post("/{kind}/{name}", self._answer)]
        )
        return app

    async def _answer(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        kind = request.match_info["kind"]
        slot = request.headers[SLOT_HEADER]
        self.calls[(name, slot)] += 1
        self.slots[name].append(datetime.fromisoformat(slot))
        self.headers[name].append(request.headers.copy())
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self._arrived.set()
        try:
            if kind == "slow":
                await asyncio.sleep(int(request.query.get("ms", "50")) / 1000)
            elif kind == "held":
                await self.release.wait()
            elif kind == "hang":
                await asyncio.Event().wait()
            elif kind == "fail":
                return web.json_response({"error": "boom"}, status=500)
            elif kind == "same":
                return web.json_response({"name": name, "batch_id": "batch-1"})
            elif kind == "stamped":
                return web.json_response(self._stamped(name, slot))
            elif kind == "echo":
                query = dict(request.query)
                return web.json_response({"name": name, "calls": self.calls_of(name), **query})
            elif kind == "answer":
                return self._as_asked(name, request.query)
            return web.json_response({"name": name, "calls": self.calls_of(name)})
        finally:
            self.in_flight -= 1

    def _stamped(self, name: str, slot: str) -> dict[str, object]:
        """The same data each time, with a clock, a request id and a counter that change on
        every call (as health checks and many APIs answer)."""
        return {
            "name": name,
            "batch_id": "batch-1",
            "checked_at": slot,
            "request_id": str(uuid.uuid4()),
            "seq": self.calls_of(name),
        }

    def _as_asked(self, name: str, query: Mapping[str, str]) -> web.Response:
        calls = self.calls_of(name)
        headers = {}
        if "next_run" in query:
            headers["Cronpilot-Next-Run"] = query["next_run"]
        status = 200
        if "status" in query and ("times" not in query or calls <= int(query["times"])):
            status = int(query["status"])
            if "retry_after" in query:
                headers["Retry-After"] = query["retry_after"]
        return web.json_response({"name": name, "calls": calls}, status=status, headers=headers)
