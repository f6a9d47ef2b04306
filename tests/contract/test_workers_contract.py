"""The workers registry on every store (memory, SQLite, PostgreSQL): heartbeats upsert, the
listing keeps the recent ones in last-seen order with their runs of the last minute, and
housekeeping forgets the stale."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cronpilot.domain.errors import ReadOnlyUnit
from cronpilot.domain.ports import Store
from cronpilot.domain.runs.workers import WorkerInfo
from cronpilot.usecases.workers import active_workers
from tests.contract.builders import T0, add_endpoint, run_once, seconds

STALE = 60.0


def _worker(worker_id: str, last_seen_after: float, **fields: object) -> WorkerInfo:
    info = WorkerInfo(
        id=worker_id,
        host="box-1",
        pid=4242,
        version="0.1.0",
        started_at=T0,
        last_seen=T0 + seconds(last_seen_after),
    )
    return replace(info, **fields)  # type: ignore[arg-type]


async def test_a_heartbeat_registers_then_moves_last_seen_on(store: Store) -> None:
    first = _worker("w1", 0)
    await store.workers.beat(first)
    await store.workers.beat(first.seen(T0 + seconds(10)))

    [listed] = await active_workers(store.reading, T0 + seconds(10), STALE)

    assert listed.worker == first.seen(T0 + seconds(10))
    assert listed.recent_runs == 0


async def test_a_restarted_worker_with_the_same_id_replaces_its_row(store: Store) -> None:
    await store.workers.beat(_worker("w1", 0))
    restarted = _worker("w1", 30, pid=9999, version="0.2.0", started_at=T0 + seconds(30))
    await store.workers.beat(restarted)

    listed = await active_workers(store.reading, T0 + seconds(30), STALE)

    assert [a.worker for a in listed] == [restarted]


async def test_listing_is_recent_workers_most_recently_seen_first(store: Store) -> None:
    for worker_id, seen in (("b", 50), ("a", 50), ("c", 70), ("gone", 5)):
        await store.workers.beat(_worker(worker_id, seen))

    listed = await active_workers(store.reading, T0 + seconds(70), STALE)

    # "gone" was last heard from 65 s before now, past the 60 s window; ties go by id.
    assert [a.worker.id for a in listed] == ["c", "a", "b"]


async def test_runs_of_the_last_minute_are_counted_per_worker(store: Store) -> None:
    await add_endpoint(store, "j", "e", T0, every=20)
    for worker_id in ("w1", "w2", "idle"):
        await store.workers.beat(_worker(worker_id, 0))
    # Slots at T0, +20, +40, +60, +80: w1 runs the first three, w2 the last two.
    for n, worker_id in enumerate(("w1", "w1", "w1", "w2", "w2")):
        await run_once(store, T0 + seconds(20 * n), worker=worker_id)
    now = T0 + seconds(85)
    for worker_id in ("w1", "w2", "idle"):
        await store.workers.beat(_worker(worker_id, 85))

    counts = {a.worker.id: a.recent_runs for a in await active_workers(store.reading, now, STALE)}

    # The last minute is [T0+25, T0+85]: w1's run at +40 and w2's at +60 and +80.
    assert counts == {"w1": 1, "w2": 2, "idle": 0}


async def test_prune_forgets_workers_silent_since_before_the_cut(store: Store) -> None:
    for worker_id, seen in (("old", 0), ("edge", 30), ("new", 60)):
        await store.workers.beat(_worker(worker_id, seen))

    assert await store.workers.prune(T0 + seconds(30)) == 1
    assert await store.workers.prune(T0 + seconds(30)) == 0

    listed = await active_workers(store.reading, T0 + seconds(60), 3600)
    assert [a.worker.id for a in listed] == ["new", "edge"]


async def test_a_reading_unit_refuses_a_heartbeat(store: Store) -> None:
    async with store.reading() as tx:
        with pytest.raises(ReadOnlyUnit):
            await tx.workers.beat(_worker("w1", 0))
