"""Wakers (`domain.ports.Waker`): wake sleeping schedulers when an endpoint becomes due earlier.

A notification is remembered until the next `wait`, so one sent while a scheduler is busy is
not lost: the scheduler looks at the store again as soon as it next goes to sleep. Waking is
only ever a shortcut: a scheduler that misses one still wakes after its `max_sleep_seconds`.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import secrets
import socket
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy.engine import make_url

from cronpilot.adapters.sql.engine import CONNECT_TIMEOUT_SECONDS, behind_pgbouncer, driver_url
from cronpilot.domain.errors import StoreUnavailable
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.ports import Waker

if TYPE_CHECKING:
    import asyncpg

log = logging.getLogger(__name__)

CHANNEL = "cronpilot_wake"

_SOCKET_SUFFIX = ".sock"
_SOCKET_NAME_BYTES = 24
"""Room for `/<pid>-<8 hex>.sock`."""
_MAX_SOCKET_PATH_BYTES = 103
"""A Unix socket path must fit `sun_path`: 108 bytes on Linux, 104 on macOS, with a NUL."""
_DATAGRAM_BYTES = 64


class InProcessWaker(Waker):
    """Wakes the schedulers of this process only: for an in-memory database, which no other
    process can see."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def wake(self) -> None:
        """`notify` for synchronous callers (a driver's notification callback)."""
        self._event.set()

    async def listen(self) -> None:
        """Nothing to do: a notification of this process is heard at once."""

    async def notify(self) -> None:
        self.wake()

    async def wait(self, timeout: float) -> bool:
        try:
            async with asyncio.timeout(timeout):
                await self._event.wait()
        except TimeoutError:
            return False
        self._event.clear()
        return True

    async def close(self) -> None:
        """Nothing to release."""


class SocketWaker(Waker):
    """Wakes every scheduler on one machine — SQLite's reach — through Unix datagram sockets.

    A listening waker binds `<folder>/<pid>-<random>.sock`; `notify` sends one byte to every
    socket in `folder`. The socket file of a process that died without `close` refuses the
    byte, and the notifier removes it.
    """

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._local = InProcessWaker()
        self._socket: socket.socket | None = None
        self._path: Path | None = None

    @property
    def folder(self) -> Path:
        return self._folder

    async def listen(self) -> None:
        """Bind this waker's socket now; until then a notification from elsewhere is missed."""
        if self._socket is not None:
            return
        path = self._folder / f"{os.getpid()}-{secrets.token_hex(4)}{_SOCKET_SUFFIX}"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            # Only processes of this user may wake its schedulers.
            self._folder.mkdir(mode=0o700, exist_ok=True)
            listener.setblocking(False)
            listener.bind(os.fspath(path))
        except OSError as exc:
            listener.close()
            raise StoreUnavailable(f"could not listen for wake-ups at {path}: {exc}") from exc
        asyncio.get_running_loop().add_reader(listener.fileno(), self._on_readable)
        self._socket, self._path = listener, path
        log.debug("listening at %s", path, extra=log_extra("listen"))

    async def notify(self) -> None:
        self._local.wake()
        try:
            listeners = list(self._folder.glob(f"*{_SOCKET_SUFFIX}"))
        except OSError:
            log.warning(
                "could not list %s", self._folder, exc_info=True, extra=log_extra("wake_failed")
            )
            return
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sender:
            sender.setblocking(False)
            for path in listeners:
                if path != self._path:
                    _send_wakeup(sender, path)

    async def wait(self, timeout: float) -> bool:
        await self.listen()
        return await self._local.wait(timeout)

    async def close(self) -> None:
        listener, self._socket = self._socket, None
        if listener is None:
            return
        asyncio.get_running_loop().remove_reader(listener.fileno())
        listener.close()
        if self._path is not None:
            self._path.unlink(missing_ok=True)

    def _on_readable(self) -> None:
        # Several notifications while busy are one wake-up: read them all.
        assert self._socket is not None
        try:
            while self._socket.recv(_DATAGRAM_BYTES):
                pass
        except BlockingIOError:
            pass
        self._local.wake()


def wake_folder(database: Path) -> Path:
    """Where the schedulers of the SQLite file `database` listen: `<database>.wake` beside it,
    so that whoever may write the database may wake them. When that path is too long for a
    socket, a folder in `/tmp` named after the database's path — not in `$TMPDIR`, which the
    scheduler and the command that wakes it need not share."""
    database = database.resolve()
    beside = database.with_name(f"{database.name}.wake")
    if len(os.fsencode(beside)) + _SOCKET_NAME_BYTES <= _MAX_SOCKET_PATH_BYTES:
        return beside
    digest = hashlib.sha256(os.fsencode(database)).hexdigest()[:16]
    return Path("/tmp") / f"cronpilot-wake-{digest}"


def _send_wakeup(sender: socket.socket, path: Path) -> None:
    try:
        sender.sendto(b"\x01", os.fspath(path))
    except ConnectionRefusedError:
        # Nobody is bound to it: its process died without closing.
        path.unlink(missing_ok=True)
        log.debug("removed stale wake-up socket %s", path, extra=log_extra("wake_stale"))
    except (FileNotFoundError, BlockingIOError):
        # Closed meanwhile (nobody left to wake), or its queue is full (wake-ups are waiting
        # for it already).
        pass
    except OSError:
        log.warning("could not wake %s", path, exc_info=True, extra=log_extra("wake_failed"))


def asyncpg_dsn(url: str) -> str:
    """A plain libpq-style DSN for asyncpg from our SQLAlchemy URL. The URL spells TLS as
    SQLAlchemy's asyncpg dialect wants (`ssl=`); a DSN must say `sslmode=`, or asyncpg would
    send `ssl` to the server as a setting."""
    parsed = make_url(driver_url(url))
    query = dict(parsed.query)
    if "ssl" in query:
        query["sslmode"] = query.pop("ssl")
    return parsed.set(drivername="postgresql", query=query).render_as_string(hide_password=False)


class PostgresWaker(Waker):
    """Wakes every scheduler on the database through LISTEN/NOTIFY on channel `cronpilot_wake`.

    Holds one dedicated asyncpg connection (a pooled one would stop listening when returned),
    opened on first use or by `listen()`, and reopened after it drops. asyncpg is imported when
    it is used, so that a CLI command on SQLite does not pay a tenth of a second for it.

    Through PgBouncer in transaction pooling mode (`?pgbouncer=true`) a LISTEN would be heard
    by whichever client's transaction holds the server connection next: this waker then only
    notifies, and its schedulers poll (they wake after their `max_sleep_seconds` anyway). The URL
    for LISTEN is `database_listen_url`, straight to PostgreSQL, where one is set.
    """

    def __init__(self, url: str) -> None:
        self._dsn = asyncpg_dsn(url)
        self._listening = not behind_pgbouncer(url)
        self._local = InProcessWaker()
        self._connection: asyncpg.Connection | None = None
        self._lock = asyncio.Lock()

    async def listen(self) -> None:
        """Start listening now; until then a notification sent by another process is missed."""
        await self._connected()

    async def notify(self) -> None:
        import asyncpg

        connection = await self._connected()
        async with self._lock:
            try:
                # No parameter, so no prepared statement: PgBouncer's transaction pooling
                # keeps none from one statement to the next.
                await connection.execute(f"NOTIFY {CHANNEL}")
            except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
                raise StoreUnavailable(f"could not notify {CHANNEL}: {exc}") from exc
        if not self._listening:
            self._local.wake()

    async def wait(self, timeout: float) -> bool:
        await self._connected()
        return await self._local.wait(timeout)

    async def close(self) -> None:
        async with self._lock:
            connection, self._connection = self._connection, None
            if connection is not None and not connection.is_closed():
                await connection.close()

    async def _connected(self) -> asyncpg.Connection:
        import asyncpg

        async with self._lock:
            if self._connection is not None and not self._connection.is_closed():
                return self._connection
            try:
                connection = await asyncpg.connect(
                    self._dsn, timeout=CONNECT_TIMEOUT_SECONDS, statement_cache_size=0
                )
            except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
                raise StoreUnavailable(f"could not connect to listen on {CHANNEL}: {exc}") from exc
            if not self._listening:
                log.info(
                    "behind PgBouncer without CRONPILOT_DATABASE_LISTEN_URL: wake-ups from "
                    "other processes are not heard, schedulers poll",
                    extra=log_extra("listen"),
                )
                self._connection = connection
                return connection
            try:
                await connection.add_listener(CHANNEL, self._on_notification)
            except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
                await connection.close()
                raise StoreUnavailable(f"could not listen on {CHANNEL}: {exc}") from exc
            if self._connection is not None:
                # The old connection dropped: notifications sent meanwhile are lost, so wake
                # once and let the scheduler look at the store again.
                self._local.wake()
            self._connection = connection
            log.debug("listening on %s", CHANNEL, extra=log_extra("listen"))
            return connection

    def _on_notification(self, connection: object, pid: int, channel: str, payload: object) -> None:
        self._local.wake()


ListeningWaker = InProcessWaker | SocketWaker | PostgresWaker
"""Every waker here: a `domain.ports.Waker` that can also start listening ahead of its first
`wait`."""
