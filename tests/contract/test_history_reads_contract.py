"""Reads of the run history that look at recent days first (`adapters.sql.recent_days`) find
what an unbounded read finds: runs spread over six weeks before the wall clock (the bound's
anchor) and a few hours after it, read by pages, by offset and by id, on every store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cronpilot.domain.model import Run, RunTrigger
from cronpilot.domain.paging import Cursor
from cronpilot.domain.ports import RunFilter, Store
from cronpilot.domain.runs.transitions import queued_run
from cronpilot.domain.schedule.time_range import TimeRange
from tests.contract.builders import OK, add_endpoint, claim_one
from tests.support.finishing import finish_one

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
AGES = (
    40 * DAY,
    20 * DAY,
    8 * DAY + HOUR,
    8 * DAY - HOUR,
    3 * DAY,
    DAY + HOUR,
    23 * HOUR,
    2 * HOUR,
)
"""How long before now each run's slot is: either side of the day and the week looked at first."""


async def _spread(store: Store, name: str, ages: tuple[timedelta, ...]) -> list[Run]:
    """Finished runs of one endpoint at these ages, and one queued three hours ahead; newest
    first."""
    now = datetime.now(UTC).replace(microsecond=0)
    await add_endpoint(store, "j", name, now + 400 * DAY)  # its own schedule never due here
    endpoint = await store.catalog.get_endpoint(f"j/{name}")
    slots = [now - age for age in ages]
    asked = [
        queued_run(
            endpoint, RunTrigger.BACKFILL, slot_at=slot, due_at=now, requested_by="t", now=now
        )
        for slot in slots
    ]
    await store.claims.enqueue(asked)
    ran = [
        await finish_one(store.claims, await claim_one(store, now), "w1", OK, now) for _ in slots
    ]
    ahead = queued_run(
        endpoint,
        RunTrigger.BACKFILL,
        slot_at=now + 3 * HOUR,
        due_at=now + DAY,
        requested_by="t",
        now=now,
    )
    (queued,) = await store.claims.enqueue([ahead])
    return sorted([*ran, queued], key=lambda run: run.slot_at, reverse=True)


async def _walk(store: Store, where: RunFilter, limit: int) -> list[Run]:
    walked: list[Run] = []
    after = None
    while page := await store.runs.page_runs(where, limit, after):
        assert len(page) <= limit
        walked += page
        after = Cursor(page[-1].slot_at, page[-1].id)
    return walked


async def test_pages_of_runs_weeks_apart_walk_them_all_newest_first(store: Store) -> None:
    every = await _spread(store, "e", AGES)
    other = await _spread(store, "f", (5 * DAY,))
    endpoint_id = every[0].endpoint_id

    for limit in (1, 2, 3, 50):
        assert [r.id for r in await _walk(store, RunFilter(endpoint_id=endpoint_id), limit)] == [
            r.id for r in every
        ]
        walked = await _walk(store, RunFilter(), limit)
        assert sorted(r.id for r in walked) == sorted(r.id for r in every + other)
        assert [r.slot_at for r in walked] == sorted((r.slot_at for r in walked), reverse=True)
    listed = [await store.runs.list_runs(endpoint_id, 2, offset) for offset in range(0, 10, 2)]
    assert [r.id for page in listed for r in page] == [r.id for r in every]
    since = every[4].slot_at  # the learner's watermark: only the days since are read
    assert [r.id for r in await store.runs.list_runs(endpoint_id, 50, 0, since)] == [
        r.id for r in every[:5]
    ]
    assert [r.id for r in await store.runs.list_runs(endpoint_id, 2, 3, since)] == [
        r.id for r in every[3:5]
    ]


async def test_a_window_and_an_old_run_by_id_are_found_as_without_the_bound(
    store: Store,
) -> None:
    every = await _spread(store, "e", AGES)
    now = datetime.now(UTC)
    window = TimeRange(since=now - 21 * DAY, until=now - 2 * DAY)
    where = RunFilter(endpoint_id=every[0].endpoint_id, within=window)

    assert [r.id for r in await store.runs.page_runs(where, 3)] == [
        r.id for r in every if window.holds(r.slot_at)
    ][:3]
    oldest = every[-1]
    assert (await store.runs.get_run(oldest.id)).id == oldest.id
    assert (await store.runs.get_run(oldest.id[:12])).id == oldest.id
    newest_finished = every[1]
    assert (await store.runs.get_run(newest_finished.id)).slot_at == newest_finished.slot_at
    latest = await store.runs.latest_runs([oldest.endpoint_id])
    assert latest[oldest.endpoint_id].id == every[0].id
