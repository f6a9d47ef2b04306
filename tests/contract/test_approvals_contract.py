"""ApprovalRepository contract, run on every store (memory, SQLite, PostgreSQL): a gated DAG
dependant waits with an approval (and its notification); approved, it starts as the child of
the run it followed; rejected or expired, it is skipped with who and why, and so is what
follows it; one approval per endpoint waits at a time; decisions are taken once."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

import pytest

from cronpilot.domain.alerts.alerts import AlertEvent
from cronpilot.domain.errors import ApprovalNotFound, ApprovalNotPending
from cronpilot.domain.graph.dependencies import with_dependants
from cronpilot.domain.model import Finish, Recorded, Response, RunStatus, RunTrigger, Schedule
from cronpilot.domain.paging import Cursor
from cronpilot.domain.planning.approvals import EXPIRED_BY, Approval, ApprovalState
from cronpilot.domain.ports import Store
from cronpilot.usecases.declarations import apply_to_catalog
from tests.contract.builders import LEASE_SECONDS, T0, claim_one, declaration, seconds, spec
from tests.support.finishing import record_one

HOOK = "https://hooks.example.com/approvals"
TIMEOUT = 600.0
A = ApprovalState


async def _declare(store: Store) -> None:
    """billing: usage every minute → cleanup (gated, notifies) → report."""
    specs = [
        spec("usage"),
        spec(
            "cleanup",
            schedule=Schedule(),
            depends_on=("usage",),
            approval_timeout_seconds=TIMEOUT,
            notify=(HOOK,),
        ),
        spec("report", schedule=Schedule(), depends_on=("cleanup",)),
    ]
    await apply_to_catalog(store.catalog, [declaration("billing", *with_dependants(specs))], T0)


async def _read_usage(store: Store, now: datetime, spend: int = 1) -> Recorded:
    claim = await claim_one(store, now)
    assert claim.endpoint.name == "usage"
    ok = Response(status_code=200, body={"spend": spend}, body_hash=f"h{spend}")
    return await record_one(store.claims, Finish(claim, "w1", ok, now, LEASE_SECONDS))


async def _asked(store: Store, now: datetime = T0, spend: int = 1) -> tuple[Recorded, Approval]:
    recorded = await _read_usage(store, now, spend)
    [approval] = recorded.approvals
    return recorded, approval


async def _runs(store: Store, name: str) -> list[Any]:
    endpoint = await store.catalog.get_endpoint(f"billing/{name}")
    return await store.runs.list_runs(endpoint.id)


async def test_a_gated_dependant_waits_with_an_approval_and_its_notification(store: Store) -> None:
    await _declare(store)

    recorded, approval = await _asked(store)

    cleanup = await store.catalog.get_endpoint("billing/cleanup")
    assert recorded.started == []
    assert (approval.endpoint_id, approval.job_id) == (cleanup.id, cleanup.job_id)
    assert (approval.dag_run_id, approval.parent_run_id) == (
        recorded.run.trace_id,
        recorded.run.id,
    )
    assert (approval.state, approval.requested_at, approval.expires_at) == (
        A.PENDING,
        T0,
        T0 + seconds(TIMEOUT),
    )
    assert await store.approvals.list_approvals() == [approval]
    assert await store.approvals.get_approval(approval.id) == approval
    [wait] = await store.dag.list_waits()
    assert (wait.endpoint_id, wait.parent_trace_id, wait.ready) == (
        cleanup.id,
        recorded.run.trace_id,
        False,
    )
    assert await _runs(store, "cleanup") == []
    [told] = await store.notifications.list_notifications()
    assert (told.event, told.url, told.endpoint_id) == (
        AlertEvent.APPROVAL_PENDING,
        HOOK,
        cleanup.id,
    )
    assert told.payload["approval"]["id"] == approval.id
    assert told.payload["approval"]["approve"] == f"cronpilot approvals approve {approval.id}"


async def test_approved_the_dependant_starts_as_the_child_of_the_run_it_followed(
    store: Store,
) -> None:
    await _declare(store)
    recorded, approval = await _asked(store)
    later = T0 + seconds(30)
    # Nothing is ready before the decision.
    assert await store.dag.claim_ready(later, "w2", LEASE_SECONDS, 10) == []

    decided = await store.approvals.decide(approval.id, A.APPROVED, "cli:ann@box", "ok", later)

    assert (decided.state, decided.decided_by, decided.decided_at, decided.reason) == (
        A.APPROVED,
        "cli:ann@box",
        later,
        "ok",
    )
    assert await store.approvals.get_approval(approval.id) == decided
    [claim] = await store.dag.claim_ready(later, "w2", LEASE_SECONDS, 10)
    assert claim.endpoint.name == "cleanup"
    assert claim.dag is not None
    assert (claim.dag.dag_run_id, claim.dag.parent_trace_id) == (
        recorded.run.trace_id,
        recorded.run.trace_id,
    )
    assert claim.dag.upstream == {"usage": {"spend": 1}}
    [running] = await _runs(store, "cleanup")
    assert (running.trigger, running.status, running.parent_trace_id) == (
        RunTrigger.DAG,
        RunStatus.RUNNING,
        recorded.run.trace_id,
    )
    # The DAG run goes on from there: cleanup's run starts report.
    done = Response(status_code=200, body={"deleted": 2}, body_hash="d")
    after = await record_one(store.claims, Finish(claim, "w2", done, later, LEASE_SECONDS))
    assert [c.endpoint.name for c in after.started] == ["report"]
    assert await store.dag.list_waits() == []


async def test_rejected_the_dependant_and_what_follows_are_skipped_with_who_and_why(
    store: Store,
) -> None:
    await _declare(store)
    recorded, approval = await _asked(store)
    later = T0 + seconds(30)

    decided = await store.approvals.decide(approval.id, A.REJECTED, "token:ops", "not now", later)

    assert decided.state is A.REJECTED
    [skipped] = await _runs(store, "cleanup")
    assert (skipped.status, skipped.parent_trace_id, skipped.worker_id) == (
        RunStatus.SKIPPED,
        recorded.run.trace_id,
        "token:ops",
    )
    assert skipped.error_message == "skipped: approval rejected by token:ops: not now"
    [following] = await _runs(store, "report")
    assert (following.status, following.parent_trace_id) == (RunStatus.SKIPPED, skipped.trace_id)
    assert following.error_message == "skipped: upstream 'cleanup' was skipped"
    assert await store.dag.list_waits() == []
    assert await store.dag.claim_ready(later, "w2", LEASE_SECONDS, 10) == []


async def test_an_approval_is_decided_once(store: Store) -> None:
    await _declare(store)
    _, approval = await _asked(store)
    await store.approvals.decide(approval.id, A.APPROVED, "cli:ann@box", None, T0)

    with pytest.raises(ApprovalNotPending, match="is approved, not pending"):
        await store.approvals.decide(approval.id, A.REJECTED, "cli:bob@box", None, T0)

    assert (await store.approvals.get_approval(approval.id)).decided_by == "cli:ann@box"
    assert await _runs(store, "cleanup") == []


async def test_two_deciding_at_once_one_wins(store: Store) -> None:
    await _declare(store)
    _, approval = await _asked(store)

    outcomes = await asyncio.gather(
        store.approvals.decide(approval.id, A.APPROVED, "cli:ann@box", None, T0),
        store.approvals.decide(approval.id, A.REJECTED, "cli:bob@box", None, T0),
        return_exceptions=True,
    )

    [won] = [o for o in outcomes if isinstance(o, Approval)]
    [lost] = [o for o in outcomes if not isinstance(o, Approval)]
    assert isinstance(lost, ApprovalNotPending)
    assert await store.approvals.get_approval(approval.id) == won
    skips = [run for run in await _runs(store, "cleanup") if run.status is RunStatus.SKIPPED]
    assert len(skips) == (1 if won.state is A.REJECTED else 0)


async def test_lapsed_approvals_are_listed_and_expire_into_a_skip(store: Store) -> None:
    await _declare(store)
    _, approval = await _asked(store)
    due = T0 + seconds(TIMEOUT)

    assert await store.approvals.list_lapsed(due - seconds(1), 10) == []
    assert await store.approvals.list_lapsed(due, 10) == [approval]
    await store.approvals.decide(approval.id, A.EXPIRED, EXPIRED_BY, None, due)

    assert await store.approvals.list_lapsed(due, 10) == []
    [skipped] = await _runs(store, "cleanup")
    assert skipped.error_message == (
        "skipped: approval expired: no decision by 2030-01-01T12:10:00+00:00 (approval_timeout)"
    )
    assert (await store.approvals.get_approval(approval.id)).decided_by == EXPIRED_BY


async def test_one_approval_of_an_endpoint_waits_at_a_time(store: Store) -> None:
    await _declare(store)
    _, first = await _asked(store)

    again = await _read_usage(store, T0 + seconds(60), spend=2)

    assert again.approvals == ()
    [skipped] = await _runs(store, "cleanup")
    assert (skipped.status, skipped.parent_trace_id) == (RunStatus.SKIPPED, again.run.trace_id)
    assert skipped.error_message == (
        "skipped: an approval asked for in an earlier DAG run is still pending"
    )
    assert [a.id for a in await store.approvals.list_approvals()] == [first.id]
    # Decided, the next DAG run asks again.
    await store.approvals.decide(first.id, A.REJECTED, "cli:ann@box", None, T0 + seconds(61))
    _, third = await _asked(store, T0 + seconds(120), spend=3)
    assert third.state is A.PENDING


async def test_lookups_by_prefix_and_unknown_ids(store: Store) -> None:
    await _declare(store)
    _, approval = await _asked(store)

    assert await store.approvals.get_approval(approval.id[:6]) == approval
    with pytest.raises(ApprovalNotFound):
        await store.approvals.get_approval("f" * 32)
    with pytest.raises(ApprovalNotFound):
        await store.approvals.decide("0" * 32, A.APPROVED, "cli:ann@box", None, T0)


async def test_listings_go_newest_first_by_state_job_and_endpoint_in_pages(store: Store) -> None:
    await _declare(store)
    asked = []
    for minute in range(3):
        _, approval = await _asked(store, T0 + seconds(60 * minute), spend=minute)
        asked.append(approval)
        if minute < 2:
            await store.approvals.decide(
                approval.id, A.REJECTED, "cli:ann@box", None, approval.requested_at
            )
    newest_first = [a.id for a in reversed(asked)]
    cleanup = await store.catalog.get_endpoint("billing/cleanup")

    assert [a.id for a in await store.approvals.list_approvals()] == newest_first
    assert [a.id for a in await store.approvals.list_approvals(A.PENDING)] == newest_first[:1]
    assert [a.id for a in await store.approvals.list_approvals(A.REJECTED)] == newest_first[1:]
    by_endpoint = await store.approvals.list_approvals(
        endpoint_id=cleanup.id, job_id=cleanup.job_id
    )
    assert [a.id for a in by_endpoint] == newest_first
    assert await store.approvals.list_approvals(job_id="0" * 32) == []
    first_page = await store.approvals.list_approvals(limit=2)
    cursor = Cursor(first_page[-1].requested_at, first_page[-1].id)
    rest = await store.approvals.list_approvals(limit=2, after=cursor)
    assert [a.id for a in first_page + rest] == newest_first


async def test_a_wait_held_for_an_approval_is_no_stale_wait(store: Store) -> None:
    await _declare(store)
    _, approval = await _asked(store)

    assert await store.dag.drop_stale_waits(T0 + seconds(86400 * 2)) == 0
    assert len(await store.dag.list_waits()) == 1
    await store.approvals.decide(approval.id, A.APPROVED, "cli:ann@box", None, T0)
    # Approved and never started (its endpoint stayed leased): an ordinary stale wait now.
    assert await store.dag.drop_stale_waits(T0 + seconds(86400 * 2)) == 1


async def test_deleting_the_job_deletes_its_approvals(store: Store) -> None:
    await _declare(store)
    await _asked(store)

    await store.catalog.delete_job("billing")

    assert await store.approvals.list_approvals() == []
