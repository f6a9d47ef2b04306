"""Keyset paging (runs, proposals, notifications), run on every store."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TypeVar

from cronpilot.domain.alerts.alerts import AlertEvent, Notification
from cronpilot.domain.model import Pause, Response, Run, RunStatus, RunTrigger, new_id
from cronpilot.domain.paging import Cursor
from cronpilot.domain.planning.planning import Proposal, ProposalKind, ProposalStatus
from cronpilot.domain.ports import RunFilter, Store
from tests.contract.builders import T0, add_endpoint, run_once, seconds
from tests.support.scheduling import set_pause

T = TypeVar("T")

FAILED = Response(status_code=500, body={"down": True})


async def _runs(store: Store) -> list[Run]:
    """Runs of two endpoints of two jobs, some failed; newest (slot, id) first."""
    await add_endpoint(store, "a", "one", T0)
    await add_endpoint(store, "b", "two", T0 + seconds(30))
    done = []
    for n in range(4):
        done.append(await run_once(store, T0 + seconds(60 * n), FAILED if n == 3 else _ok()))
        done.append(await run_once(store, T0 + seconds(60 * n + 30)))
    for endpoint in await store.catalog.list_endpoints():
        await set_pause(store.catalog, endpoint.id, Pause("written"), T0)
    return sorted(done, key=lambda run: (run.slot_at, run.id), reverse=True)


def _ok() -> Response:
    return Response(status_code=200, body={"ok": True})


async def _walk(store: Store, where: RunFilter, limit: int) -> list[Run]:
    return await _walk_all(
        lambda after: store.runs.page_runs(where, limit, after),
        lambda run: Cursor(run.slot_at, run.id),
        limit,
    )


async def test_pages_walk_every_run_once_newest_first(store: Store) -> None:
    every = await _runs(store)

    for limit in (1, 3, 8, 50):
        assert await _walk(store, RunFilter(), limit) == every


async def test_filters_narrow_the_pages(store: Store) -> None:
    every = await _runs(store)
    one = await store.catalog.get_endpoint("a/one")

    assert await _walk(store, RunFilter(endpoint_id=one.id), 2) == [
        r for r in every if r.endpoint_id == one.id
    ]
    assert await _walk(store, RunFilter(job_id=one.job_id), 2) == [
        r for r in every if r.job_id == one.job_id
    ]
    failed = await _walk(store, RunFilter(status=RunStatus.FAILED), 2)
    assert [r.status for r in failed] == [RunStatus.FAILED]
    assert await _walk(store, RunFilter(trigger=RunTrigger.MANUAL), 2) == []
    assert len(await _walk(store, RunFilter(trigger=RunTrigger.SCHEDULE), 2)) == len(every)


async def test_a_cursor_between_runs_of_one_slot_keeps_the_id_order(store: Store) -> None:
    every = await _runs(store)
    newest = every[0]
    # A cursor at the newest slot with an id above every id: the newest run follows it.
    after = Cursor(newest.slot_at, "f" * 32)
    assert (await store.runs.page_runs(RunFilter(), 1, after)) == [newest]
    assert (await store.runs.page_runs(RunFilter(), 1, replace(after, id=newest.id))) == [every[1]]
    assert await store.runs.page_runs(RunFilter(), 5, Cursor(T0, "0" * 32)) == []


async def _walk_all(
    list_page: Callable[[Cursor | None], Awaitable[list[T]]], key: Callable[[T], Cursor], limit: int
) -> list[T]:
    seen: list[T] = []
    after = None
    while True:
        page = await list_page(after)
        seen += page
        if len(page) < limit:
            return seen
        after = key(page[-1])


async def test_proposals_and_notifications_page_the_same_way(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "e", T0)
    endpoint = await store.catalog.get_endpoint(endpoint_id)
    made = []
    # Three at each of three times: the ids order a time's items.
    for n in range(9):
        created = T0 + seconds(60 * (n // 3))
        proposal = Proposal(
            id=new_id(),
            endpoint_id=endpoint_id,
            job_id=endpoint.job_id,
            kind=ProposalKind.INTERVAL,
            reason="r",
            proposed_by="heuristic",
            created_at=created,
            status=ProposalStatus.PENDING,
            interval_seconds=30.0,
        )
        notification = Notification(
            id=new_id(),
            endpoint_id=endpoint_id,
            job_id=endpoint.job_id,
            event=AlertEvent.PROPOSAL_PENDING,
            url="https://example.com/hook",
            payload={"n": n},
            created_at=created,
            next_attempt_at=created,
        )
        await store.planner.add_proposal(proposal, [notification])
        made.append((proposal, notification))
    every_proposal = await store.planner.list_proposals(limit=100)
    every_notification = await store.notifications.list_notifications(limit=100)
    assert len(every_proposal) == len(every_notification) == 9

    for limit in (1, 2, 4, 9):
        proposals = await _walk_all(
            lambda after, limit=limit: store.planner.list_proposals(limit=limit, after=after),
            lambda p: Cursor(p.created_at, p.id),
            limit,
        )
        assert proposals == every_proposal
        notifications = await _walk_all(
            lambda after, limit=limit: store.notifications.list_notifications(
                limit=limit, after=after
            ),
            lambda n: Cursor(n.created_at, n.id),
            limit,
        )
        assert notifications == every_notification
