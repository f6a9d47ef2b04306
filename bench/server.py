"""A minimal JSON endpoint server on 127.0.0.1, run as its own process by the benchmarks.

Every benchmark calls it: a small fixed JSON document for any GET path. It counts the calls
that carry cronpilot's slot header per (path, slot), so a benchmark can prove that no slot was
called twice; `GET /_stats` answers those counts. Started as `python -m bench.server`, it
prints its port on the first line of stdout and serves until stdin closes or it is terminated.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter

from aiohttp import web

from cronpilot.scheduler.requests import SLOT_HEADER

DOCUMENT = json.dumps(
    {
        "status": "ok",
        "queue": {"depth": 17, "oldest_seconds": 4.5},
        "items": [{"id": n, "price": 9.5 + n, "tags": ["a", "b"]} for n in range(3)],
    }
).encode()
"""About 200 bytes of JSON, the size of a typical health or status answer."""


class Counts:
    def __init__(self) -> None:
        self.calls = 0
        self.slots: Counter[tuple[str, str]] = Counter()

    async def answer(self, request: web.Request) -> web.Response:
        self.calls += 1
        slot = request.headers.get(SLOT_HEADER)
        if slot is not None:
            self.slots[(request.path, slot)] += 1
        return web.Response(body=DOCUMENT, content_type="application/json")

    async def stats(self, _request: web.Request) -> web.Response:
        repeated = sum(1 for count in self.slots.values() if count > 1)
        return web.json_response(
            {"calls": self.calls, "slots": len(self.slots), "repeated_slots": repeated}
        )


async def serve() -> None:
    counts = Counts()
    app = web.Application()
    app.add_routes([web.get("/_stats", counts.stats), web.get("/{path:.*}", counts.answer)])
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=4096)
    await site.start()
    print(runner.addresses[0][1], flush=True)
    # The parent closes our stdin when it is done (or dies): stop then.
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await runner.cleanup()


if __name__ == "__main__":
    asyncio.run(serve())
