"""Units of work on every store: a use case's writes land together or not at all. Each
atomicity test breaks a use case right after one of its writes (a repository swapped through
the ports, `tests.support.units`) and finds nothing written, and no scheduler woken."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from cronpilot.domain.access.access import Scope
from cronpilot.domain.access.tokens import ApiToken, hash_secret
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.graph.graph import EdgeSighting, EdgeSource, EdgeType
from cronpilot.domain.model import IntervalHint, Pause, PlannerMode, RunStatus, new_id
from cronpilot.domain.planning.planning import ProposalDraft, ProposalKind, ProposalStatus
from cronpilot.domain.ports import Store
from cronpilot.domain.runs.transitions import with_hints
from cronpilot.domain.schedule.pauses import MAX_PAUSE
from cronpilot.usecases.access import create_token, revoke_token, rotate_token
from cronpilot.usecases.declarations import apply_declarations, apply_to_catalog
from cronpilot.usecases.deletion import delete
from cronpilot.usecases.proposals import ProposalDesk, Proposer
from cronpilot.usecases.run_requests import request_backfill, request_run
from cronpilot.usecases.schedule import pause_endpoint, resume_endpoint
from tests.contract.builders import T0, add_endpoint, declaration, seconds, spec
from tests.integration.scheduler.builders import DEADLINE
from tests.support.scheduling import set_pause
from tests.support.settings import limits_for_tests
from tests.support.units import InjectedFailure, Proxy, Wrap, WrappedUnits, failing_after

LIMITS = limits_for_tests(pending_ttl_seconds=600)
REVIEW = Proposer("llm:test", PlannerMode.REVIEW, "s1")
AUTO = Proposer("llm:test", PlannerMode.AUTO, "s1")
ANN = "cli:ann@web-1"
EVERY_30 = ProposalDraft(ProposalKind.INTERVAL, "busy", 30, ttl_seconds=300)


class CountingWaker:
    def __init__(self) -> None:
        self.notified = 0

    async def notify(self) -> None:
        self.notified += 1

    async def wait(self, timeout: float) -> bool:
        return False

    async def close(self) -> None:
        return None


async def test_a_unit_keeps_its_writes_only_when_committed(store: Store) -> None:
    async with store.unit_of_work() as tx:
        await apply_to_catalog(tx.catalog, [declaration("left", spec("a"))], T0)
    with pytest.raises(InjectedFailure):
        async with store.unit_of_work() as tx:
            await apply_to_catalog(tx.catalog, [declaration("failed", spec("a"))], T0)
            raise InjectedFailure("before commit")
    async with store.unit_of_work() as tx:
        await apply_to_catalog(tx.catalog, [declaration("kept", spec("a"))], T0)
        # Reads inside the unit see its own writes.
        assert [e.ref for e in await tx.catalog.list_endpoints()] == ["kept/a"]
        await tx.commit()

    assert [job.name for job in await store.catalog.list_jobs()] == ["kept"]


async def test_units_one_after_another_see_what_the_last_committed(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "a", T0)
    for n in range(3):
        async with store.unit_of_work() as tx:
            endpoint = await tx.catalog.get_endpoint(endpoint_id)
            assert (endpoint.pause is None) == (n % 2 == 0)
            await set_pause(
                tx.catalog, endpoint_id, Pause("by hand") if endpoint.pause is None else None, T0
            )
            await tx.commit()
    assert (await store.catalog.get_endpoint(endpoint_id)).pause is not None


@pytest.mark.parametrize(
    ("repository", "method", "calls"),
    [
        ("catalog", "save_applied", 1),
        ("graph", "record", 1),
        # The last write: the provides edges' retraction, after every other step.
        ("graph", "retract", 2),
    ],
)
async def test_apply_writes_nothing_when_it_fails_after_any_step(
    store: Store, repository: str, method: str, calls: int
) -> None:
    waker = CountingWaker()
    units = WrappedUnits(store, failing_after(repository, method, calls))
    declared = declaration("etl", spec("fetch"), spec("load", depends_on=("fetch",)))

    with pytest.raises(InjectedFailure):
        await apply_declarations(units, waker, [declared], "jobs.yaml", actor=ANN, now=T0)

    assert await store.catalog.list_jobs() == []
    assert await store.catalog.list_endpoints() == []
    assert await store.graph.list_edges() == []
    assert waker.notified == 0
    report = await apply_declarations(
        store.unit_of_work, waker, [declared], "jobs.yaml", actor=ANN, now=T0
    )
    assert report.created == ["etl", "etl/fetch", "etl/load"]
    assert waker.notified == 1


async def test_apply_keeps_the_graph_as_it_was_when_it_fails(store: Store) -> None:
    await apply_declarations(
        store.unit_of_work,
        None,
        [declaration("etl", spec("fetch"), spec("load", depends_on=("fetch",)))],
        "jobs.yaml",
        actor=ANN,
        now=T0,
    )
    before = await store.graph.list_edges()
    unchained = declaration("etl", spec("fetch"), spec("load", every=30))
    units = WrappedUnits(store, failing_after("graph", "retract", 1))

    with pytest.raises(InjectedFailure):
        await apply_declarations(
            units, None, [unchained], "jobs.yaml", actor=ANN, now=T0 + seconds(1)
        )

    assert await store.graph.list_edges() == before
    load = await store.catalog.get_endpoint("etl/load")
    assert load.spec.depends_on == ("fetch",)


async def _pending(store: Store) -> str:
    endpoint_id = await add_endpoint(store, "j", "a", T0, every=600)
    desk = ProposalDesk(store.unit_of_work, store.reading, None, LIMITS)
    proposal = await desk.propose(EVERY_30, endpoint_id, REVIEW, T0)
    assert proposal.status is ProposalStatus.PENDING
    return proposal.id


@pytest.mark.parametrize(
    ("repository", "method"), [("catalog", "save_schedule"), ("planner", "decide")]
)
async def test_approve_writes_nothing_when_it_fails_after_any_step(
    store: Store, repository: str, method: str
) -> None:
    proposal_id = await _pending(store)
    before = await store.catalog.get_endpoint("j/a")
    waker = CountingWaker()
    units = WrappedUnits(store, failing_after(repository, method))
    desk = ProposalDesk(units, units.reading, waker, LIMITS)

    with pytest.raises(InjectedFailure):
        await desk.approve(proposal_id, "ann", T0 + seconds(1))

    assert await store.catalog.get_endpoint("j/a") == before
    assert (await store.planner.get_proposal(proposal_id)).status is ProposalStatus.PENDING
    assert await store.planner.count_applied(before.id, T0) == 0
    assert waker.notified == 0
    applied = await ProposalDesk(store.unit_of_work, store.reading, waker, LIMITS).approve(
        proposal_id, "ann", T0 + seconds(1)
    )
    assert applied.status is ProposalStatus.APPLIED
    assert (await store.catalog.get_endpoint("j/a")).interval_hint is not None


def waiting_for_each_other(counted: asyncio.Barrier) -> Wrap:
    """After `planner.count_applied`, wait (a little, at most) for the other unit to have
    counted too: without a lock on the endpoint both count before either applies."""

    def replacement(real: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def run(*args: Any, **kwargs: Any) -> Any:
            result = await real(*args, **kwargs)
            # The bound: where the other unit is held off by a lock, it counts only after
            # this one commits.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(counted.wait(), 0.3)
            return result

        return run

    def wrap(name: str, found: Any) -> Any:
        return Proxy(found, "count_applied", replacement) if name == "planner" else found

    return wrap


async def test_two_approvals_at_once_cannot_both_pass_the_change_limit(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "a", T0, every=600)
    review = ProposalDesk(store.unit_of_work, store.reading, None, LIMITS)
    first = await review.propose(EVERY_30, endpoint_id, REVIEW, T0)
    # A newer proposal supersedes the pending one; a database from before superseding may
    # still hold two pending proposals of one endpoint.
    second = replace(first, id=new_id(), interval_seconds=45)
    await store.planner.add_proposal(second)
    limited = replace(LIMITS, max_changes_per_hour=1)
    units = WrappedUnits(store, waiting_for_each_other(asyncio.Barrier(2)))
    desk = ProposalDesk(units, units.reading, None, limited)

    decided = await asyncio.gather(
        desk.approve(first.id, "ann", T0 + seconds(1)),
        desk.approve(second.id, "bob", T0 + seconds(1)),
    )

    assert sorted(p.status for p in decided) == sorted(
        [ProposalStatus.APPLIED, ProposalStatus.REFUSED]
    )
    assert await store.planner.count_applied(endpoint_id, T0) == 1


async def test_an_auto_proposal_is_not_applied_when_its_record_fails(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "a", T0, every=600)
    before = await store.catalog.get_endpoint(endpoint_id)
    waker = CountingWaker()
    units = WrappedUnits(store, failing_after("planner", "add_proposal"))

    with pytest.raises(InjectedFailure):
        await ProposalDesk(units, units.reading, waker, LIMITS).propose(
            EVERY_30, endpoint_id, AUTO, T0
        )

    assert await store.catalog.get_endpoint(endpoint_id) == before
    assert await store.planner.list_proposals() == []
    assert await store.notifications.list_notifications() == []
    assert waker.notified == 0


async def test_a_newer_proposal_supersedes_nothing_when_its_record_fails(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "a", T0, every=600)
    older = await ProposalDesk(store.unit_of_work, store.reading, None, LIMITS).propose(
        EVERY_30, endpoint_id, REVIEW, T0
    )
    units = WrappedUnits(store, failing_after("planner", "add_proposal"))

    with pytest.raises(InjectedFailure):
        await ProposalDesk(units, units.reading, None, LIMITS).propose(
            EVERY_30, endpoint_id, REVIEW, T0
        )

    assert await store.planner.list_proposals() == [older]


@pytest.mark.parametrize(
    ("until", "reason"),
    [
        (T0, "is not in the future"),
        (T0.replace(tzinfo=None) + seconds(60), r"has no offset \(Z, \+01:00\)"),
        (T0 + MAX_PAUSE + seconds(1), "is more than ten years ahead"),
        (datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone(timedelta(hours=14))), "is more"),
    ],
)
async def test_a_pause_ends_at_a_future_time_with_an_offset_at_most_ten_years_ahead(
    store: Store, until: datetime, reason: str
) -> None:
    # Every adapter (CLI, API, console, MCP) hands the use case what its caller wrote.
    await add_endpoint(store, "j", "a", T0)
    with pytest.raises(InvalidConfig, match=f"^until: {reason}"):
        await pause_endpoint(store.unit_of_work, "j/a", Pause("ops", until), ANN, T0)
    assert (await store.catalog.get_endpoint("j/a")).pause is None
    await pause_endpoint(store.unit_of_work, "j/a", Pause("ops", T0 + MAX_PAUSE), ANN, T0)


async def test_pause_and_resume_write_nothing_when_they_fail(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "a", T0)
    before = await store.catalog.get_endpoint(endpoint_id)
    failing = WrappedUnits(store, failing_after("catalog", "save_schedule"))

    with pytest.raises(InjectedFailure):
        await pause_endpoint(failing, "j/a", Pause("maintenance"), ANN, T0)
    assert await store.catalog.get_endpoint(endpoint_id) == before

    paused = await pause_endpoint(store.unit_of_work, "j/a", Pause("maintenance"), ANN, T0)
    waker = CountingWaker()
    with pytest.raises(InjectedFailure):
        await resume_endpoint(
            WrappedUnits(store, failing_after("catalog", "save_schedule")), waker, "j/a", ANN, T0
        )
    assert await store.catalog.get_endpoint(endpoint_id) == paused
    assert waker.notified == 0


async def test_run_now_and_backfill_queue_nothing_when_they_fail(store: Store) -> None:
    await apply_to_catalog(store.catalog, [declaration("j", spec("a", every=60))], T0)
    now = T0 + timedelta(minutes=10)
    waker = CountingWaker()
    failing = WrappedUnits(store, failing_after("claims", "enqueue"))

    with pytest.raises(InjectedFailure):
        await request_run(failing, waker, "j/a", "cli:ann", now)
    with pytest.raises(InjectedFailure):
        await request_backfill(
            WrappedUnits(store, failing_after("claims", "enqueue")),
            waker,
            "j/a",
            start=T0,
            end=now - seconds(60),
            max_slots=20,
            actor="cli:ann",
            now=now,
        )

    endpoint = await store.catalog.get_endpoint("j/a")
    assert await store.runs.list_runs(endpoint.id) == []
    assert waker.notified == 0
    queued = await request_run(store.unit_of_work, waker, "j/a", "cli:ann", now)
    assert [r.status for r in await store.runs.list_runs(endpoint.id)] == [RunStatus.QUEUED]
    assert queued.status is RunStatus.QUEUED
    assert waker.notified == 1


async def test_a_counted_edge_survives_a_failed_unit(store: Store) -> None:
    await apply_to_catalog(store.catalog, [declaration("j", spec("a"), spec("b"))], T0)
    seen = EdgeSighting("j/a", "j/b", EdgeType.SEQUENCE, EdgeSource.OBSERVED, counted=True)
    await store.graph.record([seen], T0)
    before = await store.graph.list_edges("j")
    with pytest.raises(InjectedFailure):
        async with store.unit_of_work() as tx:
            await tx.graph.record([seen, seen], T0 + seconds(1))
            raise InjectedFailure("crash")
    assert await store.graph.list_edges("j") == before


async def test_a_write_beside_a_unit_waits_for_it_and_outlives_its_rollback(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "a", T0)
    hint = IntervalHint(30, T0 + seconds(300), "busy")
    hinted = with_hints(await store.catalog.get_endpoint(endpoint_id), hint, None, T0)
    async with asyncio.timeout(DEADLINE):
        async with store.unit_of_work() as tx:
            await set_pause(tx.catalog, endpoint_id, Pause("about to fail"), T0)
            # Same row: the database's row lock (SQLite's write lock, memory's store lock)
            # holds it until the unit ends; then it writes what it was handed.
            beside = asyncio.create_task(store.catalog.save_schedule(hinted))
            for _ in range(10):
                await asyncio.sleep(0)  # let it start and queue for the lock
            assert not beside.done()
        await beside

    stored = await store.catalog.get_endpoint(endpoint_id)
    assert (stored.pause, stored.interval_hint) == (None, hint)
    assert hinted == stored


NOW = T0 + timedelta(minutes=5)


async def _everything(store: Store) -> tuple[Any, ...]:
    """All that a write use case could change, audit log included."""
    endpoints = await store.catalog.list_endpoints()
    return (
        await store.catalog.list_jobs(),
        endpoints,
        [await store.runs.list_runs(e.id) for e in endpoints],
        await store.planner.list_proposals(),
        await store.graph.list_edges(),
        await store.access.list_tokens(include_revoked=True),
        await store.access.list_audit(),
    )


Write = Callable[[Any, CountingWaker, str], Awaitable[object]]
"""A write use case on (units of work, waker, pending proposal id), for `ANN` at `NOW`."""
WRITES: dict[str, tuple[Write, str]] = {
    "apply": (
        lambda units, waker, _: apply_declarations(
            units, waker, [declaration("k", spec("b"))], "jobs.yaml", actor=ANN, now=NOW
        ),
        "jobs.yaml",
    ),
    "pause": (lambda units, _, __: pause_endpoint(units, "j/a", Pause("ops"), ANN, NOW), "j/a"),
    "resume": (lambda units, waker, _: resume_endpoint(units, waker, "j/held", ANN, NOW), "j/held"),
    "run_now": (lambda units, waker, _: request_run(units, waker, "j/a", ANN, NOW), "j/a"),
    "backfill": (
        lambda units, waker, _: request_backfill(
            units, waker, "j/a", start=T0, end=NOW, max_slots=5, actor=ANN, now=NOW
        ),
        "j/a",
    ),
    "approve": (
        lambda units, waker, proposal: ProposalDesk(units, units, waker, LIMITS).approve(
            proposal, ANN, NOW
        ),
        "proposal",
    ),
    "reject": (
        lambda units, waker, proposal: ProposalDesk(units, units, waker, LIMITS).reject(
            proposal, ANN, "not now", NOW
        ),
        "proposal",
    ),
    "token_create": (
        lambda units, _, __: create_token(units, "ci", Scope.WRITE, ANN, NOW),
        "ci",
    ),
    "token_revoke": (lambda units, _, __: revoke_token(units, "old", ANN, NOW), "old"),
    "token_rotate": (lambda units, _, __: rotate_token(units, "old", ANN, NOW), "old"),
    "delete": (lambda units, _, __: delete(units, "j/a", ANN, NOW), "j/a"),
}


@pytest.mark.parametrize("action", list(WRITES))
async def test_every_write_is_audited_in_its_unit_of_work(store: Store, action: str) -> None:
    """Broken right after its audit entry (its last write), a write use case leaves nothing
    written; whole, it leaves one entry naming the actor, the action and the target."""
    proposal = await _pending(store)
    await apply_to_catalog(store.catalog, [declaration("j", spec("held"))], T0)
    held = await store.catalog.get_endpoint("j/held")
    await set_pause(store.catalog, held.id, Pause("earlier", None, "cli:bob@web-2"), T0)
    await store.access.add_token(
        ApiToken("old-id", "old", Scope.READ, hash_secret("old"), T0, "cli:bob@web-2")
    )
    write, target = WRITES[action]
    before = await _everything(store)
    waker = CountingWaker()

    with pytest.raises(InjectedFailure):
        await write(WrappedUnits(store, failing_after("access", "record")), waker, proposal)

    assert await _everything(store) == before
    assert waker.notified == 0
    await write(store.unit_of_work, waker, proposal)
    [entry] = await store.access.list_audit()
    assert (entry.actor, entry.action, entry.target, entry.at) == (
        ANN,
        action,
        proposal if target == "proposal" else target,
        NOW,
    )


async def test_a_pause_keeps_who_paused_and_a_run_who_asked(store: Store) -> None:
    await apply_to_catalog(store.catalog, [declaration("j", spec("a"))], T0)

    paused = await pause_endpoint(store.unit_of_work, "j/a", Pause("ops"), ANN, NOW)
    queued = await request_run(store.unit_of_work, CountingWaker(), "j/a", "token:ci", NOW)

    assert paused.pause == Pause("ops", None, ANN)
    assert (await store.catalog.get_endpoint("j/a")).pause == Pause("ops", None, ANN)
    assert queued.requested_by == "token:ci"


@pytest.mark.parametrize(
    ("ref", "repository", "method"),
    [
        ("shop", "catalog", "delete_job"),
        ("shop", "graph", "forget"),
        ("shop", "access", "record"),
        ("shop/prices", "catalog", "delete_endpoints"),
        ("shop/prices", "graph", "forget"),
        ("shop/prices", "access", "record"),
    ],
)
async def test_delete_writes_nothing_when_it_fails_after_any_step(
    store: Store, ref: str, repository: str, method: str
) -> None:
    declared = declaration("shop", spec("stock"), spec("prices", depends_on=("stock",)))
    await apply_declarations(store.unit_of_work, None, [declared], "jobs.yaml", actor=ANN, now=T0)
    edges = await store.graph.list_edges()
    assert edges

    with pytest.raises(InjectedFailure):
        await delete(WrappedUnits(store, failing_after(repository, method)), ref, ANN, NOW)

    assert [e.ref for e in await store.catalog.list_endpoints()] == ["shop/prices", "shop/stock"]
    assert await store.graph.list_edges() == edges
