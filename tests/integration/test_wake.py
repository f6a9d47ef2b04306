"""Wakers: in one process, across processes of one machine through Unix sockets (SQLite), and
across connections through PostgreSQL LISTEN/NOTIFY."""

from __future__ import annotations

import asyncio
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from cronpilot.adapters.bootstrap import build_waker
from cronpilot.adapters.settings import load_settings
from cronpilot.adapters.wake import (
    InProcessWaker,
    PostgresWaker,
    SocketWaker,
    asyncpg_dsn,
    wake_folder,
)
from cronpilot.domain.errors import StoreUnavailable
from tests.support.hostile_server import unused_port

LONG_WAIT = 30.0


async def test_in_process_notification_is_kept_until_the_next_wait() -> None:
    waker = InProcessWaker()
    assert await waker.wait(0.01) is False

    await waker.notify()
    async with asyncio.timeout(1):
        assert await waker.wait(LONG_WAIT) is True
    assert await waker.wait(0.01) is False
    await waker.close()


async def test_in_process_notify_wakes_a_sleeping_waiter() -> None:
    waker = InProcessWaker()
    sleeping = asyncio.create_task(waker.wait(LONG_WAIT))
    await asyncio.sleep(0)

    await waker.notify()
    async with asyncio.timeout(1):
        assert await sleeping is True


@pytest.mark.postgres
async def test_notify_on_one_connection_wakes_a_waiter_on_another(postgres_url: str) -> None:
    sleeper, notifier = PostgresWaker(postgres_url), PostgresWaker(postgres_url)
    try:
        await sleeper.listen()
        assert await sleeper.wait(0.05) is False
        waiting = asyncio.create_task(sleeper.wait(LONG_WAIT))

        await notifier.notify()
        async with asyncio.timeout(2):
            assert await waiting is True
        assert await sleeper.wait(0.05) is False
    finally:
        await sleeper.close()
        await notifier.close()


@pytest.mark.postgres
async def test_a_notifier_wakes_its_own_process_too(postgres_url: str) -> None:
    waker = PostgresWaker(postgres_url)
    try:
        waiting = asyncio.create_task(waker.wait(LONG_WAIT))
        await waker.listen()
        await waker.notify()
        async with asyncio.timeout(2):
            assert await waiting is True
    finally:
        await waker.close()


async def test_unreachable_database_is_store_unavailable() -> None:
    waker = PostgresWaker(f"postgresql+asyncpg://postgres@127.0.0.1:{unused_port()}/none")
    with pytest.raises(StoreUnavailable) as raised:
        await waker.wait(0.01)
    assert isinstance(raised.value.__cause__, OSError)
    await waker.close()


# --- SQLite: Unix datagram sockets beside the database file -------------------------------


def _sockets(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.sock"))


def _contents(folder: Path) -> list[Path]:
    return sorted(folder.iterdir())


@pytest.fixture
def folder() -> Iterator[Path]:
    """A wake folder for sockets: beside a database in a short folder, since pytest's tmp_path
    (longer under pytest-xdist) can be too long a path for a socket."""
    with tempfile.TemporaryDirectory(dir="/tmp", prefix="cp-") as short:
        yield Path(short) / "cronpilot.db.wake"


async def _notify_from_another_loop(folder: Path) -> None:
    """Notify as another process would: its own waker, on its own event loop and thread."""

    async def notify() -> None:
        notifier = SocketWaker(folder)
        try:
            await notifier.notify()
        finally:
            await notifier.close()

    await asyncio.to_thread(asyncio.run, notify())


async def test_a_notify_elsewhere_wakes_a_sleeping_socket_waker(folder: Path) -> None:
    sleeper = SocketWaker(folder)
    try:
        await sleeper.listen()
        assert await sleeper.wait(0.05) is False
        waiting = asyncio.create_task(sleeper.wait(LONG_WAIT))

        await _notify_from_another_loop(folder)
        async with asyncio.timeout(2):
            assert await waiting is True
        assert await sleeper.wait(0.05) is False
    finally:
        await sleeper.close()


async def test_a_socket_notification_is_kept_until_the_next_wait(folder: Path) -> None:
    sleeper = SocketWaker(folder)
    try:
        await sleeper.listen()
        for _ in range(3):
            await _notify_from_another_loop(folder)

        async with asyncio.timeout(2):
            assert await sleeper.wait(LONG_WAIT) is True
        # Three notifications while busy are one wake-up, not three.
        assert await sleeper.wait(0.05) is False
    finally:
        await sleeper.close()


async def test_stale_sockets_are_removed_and_the_live_ones_still_woken(folder: Path) -> None:
    sleeper = SocketWaker(folder)
    try:
        await sleeper.listen()
        [live] = _sockets(folder)
        # A scheduler that died without closing leaves its socket file behind.
        stale = folder / "4242-deadbeef.sock"
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as dead:
            dead.bind(str(stale))
        waiting = asyncio.create_task(sleeper.wait(LONG_WAIT))

        await _notify_from_another_loop(folder)
        async with asyncio.timeout(2):
            assert await waiting is True
        assert _sockets(folder) == [live]
    finally:
        await sleeper.close()
    assert _sockets(folder) == []


async def test_notify_with_nobody_listening_does_nothing(tmp_path: Path) -> None:
    await _notify_from_another_loop(tmp_path / "never-created.wake")

    assert _contents(tmp_path) == []


async def test_a_folder_that_cannot_be_made_is_store_unavailable(tmp_path: Path) -> None:
    waker = SocketWaker(tmp_path / "missing" / "cronpilot.db.wake")
    with pytest.raises(StoreUnavailable) as raised:
        await waker.wait(0.01)
    assert isinstance(raised.value.__cause__, OSError)
    await waker.close()


def test_sockets_of_a_shallow_database_live_beside_it() -> None:
    # pytest's tmp_path can be long enough to need the fallback, so use a short folder.
    with tempfile.TemporaryDirectory(dir="/tmp", prefix="cp-") as short:
        database = Path(short) / "cronpilot.db"
        assert wake_folder(database) == database.with_name("cronpilot.db.wake")


async def test_sockets_of_a_deep_database_path_live_in_a_short_private_folder(
    tmp_path: Path,
) -> None:
    deep = tmp_path.joinpath(*["nested-folder"] * 8) / "cronpilot.db"
    deep.parent.mkdir(parents=True)

    folder = wake_folder(deep)
    assert folder == wake_folder(deep)
    assert folder != wake_folder(deep.with_name("other.db"))
    waker = SocketWaker(folder)
    try:
        await waker.listen()
        assert len(_sockets(folder)) == 1
    finally:
        await waker.close()
        folder.rmdir()


def test_build_waker_picks_the_waker_that_reaches_every_scheduler(tmp_path: Path) -> None:
    def waker_for(url: str) -> object:
        return build_waker(load_settings(database_url=url))

    database = tmp_path / "cronpilot.db"
    on_file = waker_for(f"sqlite+aiosqlite:///{database}")
    assert isinstance(on_file, SocketWaker)
    assert on_file.folder == wake_folder(database)
    for in_memory in (
        "sqlite+aiosqlite://",
        "sqlite+aiosqlite:///:memory:",
        "sqlite+aiosqlite:///file:shared?mode=memory&uri=true",
    ):
        assert isinstance(waker_for(in_memory), InProcessWaker), in_memory
    assert isinstance(waker_for("postgresql+asyncpg://postgres@127.0.0.1/test"), PostgresWaker)


def test_the_postgres_waker_spells_tls_the_wayasyncpg_dsns_do() -> None:
    dsn = asyncpg_dsn("postgresql+asyncpg://u:p@db.example/cp?ssl=require")

    assert dsn == "postgresql://u:p@db.example/cp?sslmode=require"
