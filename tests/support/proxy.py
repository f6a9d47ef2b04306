"""A TCP proxy on loopback in front of PostgreSQL that a test can cut and mend."""

from __future__ import annotations

import asyncio
import contextlib


class CuttableProxy:
    """A TCP proxy on loopback in front of PostgreSQL that the test can cut and mend: cut, it
    drops the connections it carries and every new one at once."""

    def __init__(self, target_port: int) -> None:
        self._target = target_port
        self._server: asyncio.Server | None = None
        self._carried: set[asyncio.StreamWriter] = set()
        self.cut = False
        self.port = 0

    async def __aenter__(self) -> CuttableProxy:
        self._server = await asyncio.start_server(self._carry, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *_: object) -> None:
        self.sever()
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    def sever(self) -> None:
        self.cut = True
        for writer in list(self._carried):
            writer.close()

    async def _carry(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.cut:
            writer.close()
            return
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self._target)
        self._carried |= {writer, upstream_writer}
        try:
            await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))
        finally:
            self._carried -= {writer, upstream_writer}
            writer.close()
            upstream_writer.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    writer.close()
