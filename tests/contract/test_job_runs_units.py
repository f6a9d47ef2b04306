"""The use cases of issue 25 in their units of work, on every store: each breaks right after
its first write and finds nothing written and no scheduler woken (`tests.support.units`)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from cronpilot.domain.alerts.alerts import NotificationStatus
from cronpilot.domain.graph.dependencies import with_dependants
from cronpilot.domain.model import Pause, RunStatus
from cronpilot.domain.ports import Store
from cronpilot.usecases.access import list_audit
from cronpilot.usecases.alert_delivery import redeliver, send_test
from cronpilot.usecases.declarations import apply_to_catalog
from cronpilot.usecases.run_control import cancel_run, clear_dag, retry_run
from cronpilot.usecases.run_requests import request_run
from cronpilot.usecases.schedule import pause_job, resume_job
from tests.contract.builders import T0, declaration, run_once, spec
from tests.contract.test_units_of_work import ANN, CountingWaker
from tests.support.units import InjectedFailure, WrappedUnits, failing_after


async def test_job_pause_and_resume_write_nothing_when_they_fail(store: Store) -> None:
    await apply_to_catalog(store.catalog, [declaration("j", spec("a"))], T0)
    waker = CountingWaker()

    with pytest.raises(InjectedFailure):
        await pause_job(
            WrappedUnits(store, failing_after("catalog", "set_job_pause")),
            "j",
            Pause("upkeep"),
            ANN,
            T0,
        )
    assert (await store.catalog.get_job("j")).pause is None
    await pause_job(store.unit_of_work, "j", Pause("upkeep"), ANN, T0)
    with pytest.raises(InjectedFailure):
        await resume_job(
            WrappedUnits(store, failing_after("catalog", "set_job_pause")), waker, "j", ANN, T0
        )

    assert (await store.catalog.get_job("j")).pause == Pause("upkeep", None, ANN)
    assert (await store.catalog.get_endpoint("j/a")).job_pause == Pause("upkeep", None, ANN)
    assert waker.notified == 0
    assert [e.action for e in await list_audit(store.reading)] == ["pause"]


async def test_cancel_retry_and_clear_write_nothing_when_they_fail(store: Store) -> None:
    declared = with_dependants([spec("a"), spec("b", depends_on=("a",))])
    await apply_to_catalog(store.catalog, [declaration("j", *declared)], T0)
    root = await run_once(store, T0)
    now = T0 + timedelta(seconds=1)
    waker = CountingWaker()
    queued = await request_run(store.unit_of_work, waker, "j/a", ANN, now)

    with pytest.raises(InjectedFailure):
        await cancel_run(
            WrappedUnits(store, failing_after("runs", "ask_cancel")), queued.id, ANN, now
        )
    with pytest.raises(InjectedFailure):
        await retry_run(
            WrappedUnits(store, failing_after("claims", "enqueue")), waker, root.id, ANN, now
        )
    with pytest.raises(InjectedFailure):
        await clear_dag(
            WrappedUnits(store, failing_after("dag", "add_ready")),
            waker,
            root.id,
            "b",
            actor=ANN,
            now=now,
        )

    assert (await store.runs.get_run(queued.id)).status is RunStatus.QUEUED
    endpoint = await store.catalog.get_endpoint("j/a")
    assert len(await store.runs.list_runs(endpoint.id)) == 2
    assert await store.dag.list_waits() == []
    assert waker.notified == 1
    assert [e.action for e in await list_audit(store.reading)] == ["run_now"]


async def test_a_test_alert_and_a_redelivery_write_nothing_when_they_fail(store: Store) -> None:
    """Issue 32: `notify test` and `notifications redeliver` break after their first write."""
    hook = "https://hooks.example.com/ops"
    await apply_to_catalog(store.catalog, [declaration("j", spec("a", notify=(hook,)))], T0)

    with pytest.raises(InjectedFailure):
        await send_test(WrappedUnits(store, failing_after("notifications", "add")), "j/a", ANN, T0)
    assert await store.notifications.list_notifications() == []
    [sent] = await send_test(store.unit_of_work, "j/a", ANN, T0)
    [claimed] = await store.notifications.claim_due(T0, "n1", 60, 1)
    assert await store.notifications.mark_failed(claimed.id, "n1", "HTTP 500", None, T0)
    with pytest.raises(InjectedFailure):
        await redeliver(
            WrappedUnits(store, failing_after("notifications", "redeliver")), sent.id, ANN, T0
        )

    [failed] = await store.notifications.list_notifications()
    assert (failed.status, failed.attempts) == (NotificationStatus.FAILED, 1)
    assert [e.action for e in await list_audit(store.reading)] == ["notify_test"]
