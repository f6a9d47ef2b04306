"""Approval gates end to end, on every store: the worker loop runs a DAG run whose gated dependant
waits (its webhook told) until an admin approves it through the approval desk, then runs as the
child of the run it followed; decisions are audited and counted; the housekeeping timers expire
what nobody decided, on the fake clock."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import timedelta

import pytest
from prometheus_client.parser import text_string_to_metric_families

from cronpilot.adapters.bootstrap import notifier_config
from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
from cronpilot.adapters.metrics import PrometheusTelemetry
from cronpilot.adapters.wake import InProcessWaker
from cronpilot.domain.errors import ApprovalNotPending
from cronpilot.domain.graph.dependencies import with_dependants
from cronpilot.domain.model import Finish, Response, RunStatus, RunTrigger, Schedule
from cronpilot.domain.planning.approvals import EXPIRED_BY, Approval, ApprovalState
from cronpilot.domain.ports import Store
from cronpilot.scheduler.housekeeping import Housekeeping
from cronpilot.scheduler.notifier import Notifier
from cronpilot.usecases.approvals import ApprovalDesk
from tests.integration.scheduler.builders import (
    DEADLINE,
    Notifying,
    RunningWorker,
    declare,
    runs_of,
    spec,
)
from tests.integration.scheduler.endpoint_server import EndpointServer
from tests.integration.scheduler.test_notifier import WebhookServer
from tests.support.clock import FakeClock
from tests.support.finishing import record_one
from tests.support.settings import retention_for_tests, settings_for_tests
from tests.support.side_tasks import running
from tests.support.units import no_unit_of_work

TIMEOUT = 60.0


async def _declare(store: Store, clock: FakeClock, server: EndpointServer, hook: str) -> None:
    """usage (every minute) → cleanup, gated, its request filled from usage's answer."""
    usage = spec(server, "echo", "usage")
    cleanup = spec(
        server,
        "echo",
        "cleanup",
        schedule=Schedule(),
        depends_on=("usage",),
        approval_timeout_seconds=TIMEOUT,
        notify=(hook,),
    )
    cleanup = replace(cleanup, url=cleanup.url + "?after={{ usage.name }}")
    await declare(store, clock.now(), *with_dependants([usage, cleanup]))


async def _waiting(store: Store) -> Approval:
    [approval] = await store.approvals.list_approvals(ApprovalState.PENDING)
    return approval


def _approvals_counted(telemetry: PrometheusTelemetry) -> dict[str, float]:
    exposition = telemetry.exposition()[0].decode()
    return {
        sample.labels["outcome"]: sample.value
        for family in text_string_to_metric_families(exposition)
        for sample in family.samples
        if sample.name == "cronpilot_approvals_total"
    }


async def test_the_gated_dependant_runs_once_approved_as_the_child_of_its_upstream_run(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    telemetry = PrometheusTelemetry()
    desk = ApprovalDesk(store.unit_of_work, store.reading, waker, telemetry=telemetry)
    async with WebhookServer() as hooks:
        await _declare(store, clock, server, hooks.url())
        async with RunningWorker(store, dispatcher, clock, waker) as running:
            await running.until_finished(1)
            approval = await _waiting(store)
            assert await runs_of(store, "cleanup") == []
            # The admins' webhook hears of it.
            notifier = Notifier(
                store, dispatcher, clock, notifier_config(settings_for_tests(worker_id="n1"))
            )
            assert await notifier.deliver_due() == 1
            [told] = hooks.received
            assert told.document["event"] == "approval_pending"
            assert told.document["endpoint"] == "tests/cleanup"
            assert told.document["approval"] == {
                "id": approval.id,
                "dag_run_id": approval.dag_run_id,
                "parent_run_id": approval.parent_run_id,
                "requested_at": approval.requested_at.isoformat(),
                "expires_at": approval.expires_at.isoformat(),
                "approve": f"cronpilot approvals approve {approval.id}",
            }

            # The clock stands still, short of the worker's next look for ready DAG waits:
            # the approval wakes it, and it looks at once.
            decided = await desk.approve(approval.id[:8], "cli:ann@box", "budget ok", clock.now())
            await running.until_finished(2)

    [usage] = await runs_of(store, "usage")
    [cleanup] = await runs_of(store, "cleanup")
    assert (decided.state, decided.decided_by, decided.reason) == (
        ApprovalState.APPROVED,
        "cli:ann@box",
        "budget ok",
    )
    assert (cleanup.status, cleanup.trigger, cleanup.parent_trace_id) == (
        RunStatus.SUCCESS,
        RunTrigger.DAG,
        usage.trace_id,
    )
    assert cleanup.body == {"name": "cleanup", "calls": 1, "after": "usage"}
    [entry] = await store.access.list_audit()
    assert (entry.actor, entry.action, entry.target, entry.detail) == (
        "cli:ann@box",
        "approve",
        approval.id,
        "approved tests/cleanup: budget ok",
    )
    assert _approvals_counted(telemetry) == {"approved": 1.0}


def _desk(store: Store) -> tuple[ApprovalDesk, PrometheusTelemetry]:
    telemetry = PrometheusTelemetry()
    return ApprovalDesk(store.unit_of_work, store.reading, None, telemetry=telemetry), telemetry


async def _asked(store: Store, clock: FakeClock, server: EndpointServer) -> Approval:
    """usage run once by hand at the clock's now: cleanup waits for an approval."""
    await _declare(store, clock, server, "https://hooks.example.com/a")
    [claim] = await store.claims.claim_due(clock.now(), "w1", 60, 1)
    ok = Response(status_code=200, body={"spend": 1}, body_hash="h")
    await record_one(store.claims, Finish(claim, "w1", ok, clock.now(), 60))
    return await _waiting(store)


async def test_a_rejection_skips_with_who_and_why_and_a_second_decision_is_refused(
    store: Store, clock: FakeClock, server: EndpointServer
) -> None:
    desk, telemetry = _desk(store)
    approval = await _asked(store, clock, server)

    await desk.reject(approval.id, "token:ops", "over budget", clock.now())
    with pytest.raises(ApprovalNotPending, match="is rejected, not pending"):
        await desk.approve(approval.id, "cli:ann@box", None, clock.now())

    [skipped] = await runs_of(store, "cleanup")
    assert skipped.error_message == "skipped: approval rejected by token:ops: over budget"
    [entry] = await store.access.list_audit()
    assert (entry.actor, entry.action, entry.detail) == (
        "token:ops",
        "reject",
        "rejected tests/cleanup: over budget",
    )
    assert _approvals_counted(telemetry) == {"rejected": 1.0}


async def test_an_approval_too_late_expires_instead(
    store: Store, clock: FakeClock, server: EndpointServer
) -> None:
    desk, telemetry = _desk(store)
    approval = await _asked(store, clock, server)
    clock.advance(TIMEOUT)

    with pytest.raises(ApprovalNotPending, match="is expired, not pending"):
        await desk.approve(approval.id, "cli:ann@box", None, clock.now())

    expired = await store.approvals.get_approval(approval.id)
    assert (expired.state, expired.decided_by) == (ApprovalState.EXPIRED, EXPIRED_BY)
    [skipped] = await runs_of(store, "cleanup")
    assert skipped.status is RunStatus.SKIPPED
    assert await store.access.list_audit() == []
    assert _approvals_counted(telemetry) == {"expired": 1.0}


async def test_looking_for_lapsed_approvals_writes_nothing_when_none_lapsed(
    store: Store, clock: FakeClock, server: EndpointServer
) -> None:
    approval = await _asked(store, clock, server)
    desk = ApprovalDesk(no_unit_of_work, store.reading, None)

    assert await desk.expire_lapsed(clock.now()) == []
    assert (await store.approvals.get_approval(approval.id)).state is ApprovalState.PENDING


async def test_housekeeping_expires_what_nobody_decided_on_its_timer(
    store: Store, clock: FakeClock, server: EndpointServer
) -> None:
    approval = await _asked(store, clock, server)
    desk, telemetry = _desk(store)
    expired = asyncio.Event()
    housekeeping = Housekeeping(
        store,
        clock,
        reaper_interval_seconds=10,
        retention_runs=5,
        prune_interval_seconds=600,
        worker_stale_seconds=60,
        retention=retention_for_tests(),
        approvals=Notifying(desk, expire_lapsed=expired),  # type: ignore[arg-type]
    )

    async with running(housekeeping):
        async with asyncio.timeout(DEADLINE):
            # The first turn comes at once, before the expiry: nothing to do.
            await expired.wait()
            assert (await store.approvals.get_approval(approval.id)).state is ApprovalState.PENDING
            # The reaper and the expiry share their interval: both asleep, time moves on.
            await clock.until_sleeping_until(clock.now() + timedelta(seconds=10), sleepers=2)
            expired.clear()
            clock.advance(TIMEOUT)
            await expired.wait()

    assert (await store.approvals.get_approval(approval.id)).state is ApprovalState.EXPIRED
    [skipped] = await runs_of(store, "cleanup")
    assert skipped.error_message == (
        f"skipped: approval expired: no decision by {approval.expires_at.isoformat()} "
        "(approval_timeout)"
    )
    assert _approvals_counted(telemetry) == {"expired": 1.0}
