"""Alerts on every store (memory, SQLite, PostgreSQL): auto-pause in the finish, the outbox
written in the transaction of the run (or the proposal) that raised it, and the
`NotificationRepository` the notifier works with."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

import pytest

from cronpilot.domain.alerts.alerts import AlertEvent, Notification, NotificationStatus
from cronpilot.domain.errors import LeaseLost, NotificationNotFound
from cronpilot.domain.graph.dependencies import with_dependants
from cronpilot.domain.model import Finish, Pause, Response, Schedule, ScheduleSource
from cronpilot.domain.ports import Store
from cronpilot.usecases.declarations import apply_to_catalog
from tests.contract.builders import (
    LEASE_SECONDS,
    OK,
    T0,
    claim_one,
    declaration,
    run_once,
    seconds,
    spec,
)
from tests.support.finishing import finish_one, record_one
from tests.support.scheduling import set_pause

FAILED = Response(status_code=503, error_message="HTTP 503 Service Unavailable")
HOOK = "https://hooks.example.com/a"
OTHER = "https://hooks.example.com/b"
E = AlertEvent


async def _declare(store: Store, name: str = "e", job: str = "j", **alerts: Any) -> str:
    """One endpoint due every minute from T0; returns its id."""
    await apply_to_catalog(store.catalog, [declaration(job, spec(name, **alerts))], T0)
    return (await store.catalog.get_endpoint(f"{job}/{name}")).id


async def _outcomes(store: Store, endpoint_id: str, letters: str) -> datetime:
    """Run the endpoint at each of its next runs (failures back off): F fails, S succeeds.
    Returns when the last run finished."""
    now = T0
    for letter in letters:
        due = (await store.catalog.get_endpoint(endpoint_id)).next_run_at
        assert due is not None
        now = due
        await run_once(store, now, OK if letter == "S" else FAILED)
    return now


def _events(found: list[Notification]) -> list[tuple[AlertEvent, str]]:
    return sorted((n.event, n.url) for n in found)


async def test_auto_pause_after_consecutive_failures(store: Store) -> None:
    endpoint_id = await _declare(store, pause_after=3)

    await _outcomes(store, endpoint_id, "FF")
    assert (await store.catalog.get_endpoint(endpoint_id)).pause is None
    await _outcomes(store, endpoint_id, "F")

    paused = await store.catalog.get_endpoint(endpoint_id)
    assert paused.pause == Pause("auto-paused after 3 consecutive failures", by="scheduler")
    assert (paused.next_run_at, paused.next_run_source) == (None, ScheduleSource.PAUSED)
    assert await store.claims.claim_due(T0 + seconds(3600), "w1", LEASE_SECONDS, 10) == []
    # Without webhooks it pauses all the same, silently.
    assert await store.notifications.list_notifications() == []

    resumed = await set_pause(store.catalog, endpoint_id, None, T0 + seconds(3600))
    assert (resumed.pause, resumed.failure_count) == (None, 3)
    await _outcomes(store, endpoint_id, "S")
    assert (await store.catalog.get_endpoint(endpoint_id)).failure_count == 0


async def test_a_streak_writes_one_failing_row_per_url_then_recovered(store: Store) -> None:
    endpoint_id = await _declare(store, notify=(HOOK, OTHER), notify_after=2)

    finished = await _outcomes(store, endpoint_id, "FF")
    failing = await store.notifications.list_notifications()
    [second_run, _] = await store.runs.list_runs(endpoint_id)
    assert _events(failing) == [(E.FAILING, HOOK), (E.FAILING, OTHER)]
    assert {n.created_at for n in failing} == {finished}
    assert {n.payload["last_run"]["id"] for n in failing} == {second_run.id}
    assert {(n.status, n.attempts) for n in failing} == {(NotificationStatus.PENDING, 0)}

    await _outcomes(store, endpoint_id, "FFF")
    assert len(await store.notifications.list_notifications()) == 2

    await _outcomes(store, endpoint_id, "S")
    recovered = await store.notifications.list_notifications(limit=2)
    assert _events(recovered) == [(E.RECOVERED, HOOK), (E.RECOVERED, OTHER)]
    assert {n.payload["failure_count"] for n in recovered} == {0}


async def test_auto_paused_is_written_with_the_pause(store: Store) -> None:
    endpoint_id = await _declare(store, notify=(HOOK,), notify_after=1, pause_after=2)

    await _outcomes(store, endpoint_id, "FF")

    found = await store.notifications.list_notifications()
    assert _events(found) == [(E.AUTO_PAUSED, HOOK), (E.FAILING, HOOK)]
    [paused] = [n for n in found if n.event is E.AUTO_PAUSED]
    assert paused.payload["paused"] == {
        "reason": "auto-paused after 2 consecutive failures",
        "until": None,
    }


@pytest.mark.parametrize(
    ("claimed_with", "finished_with", "paused", "events"),
    [
        ({"notify": (HOOK,), "notify_after": 1, "pause_after": 1}, {}, False, []),
        (
            {"notify": (HOOK,), "notify_after": 1, "pause_after": 1},
            {"notify": (OTHER,), "notify_after": 1, "pause_after": 1},
            True,
            [(E.AUTO_PAUSED, OTHER), (E.FAILING, OTHER)],
        ),
        (
            {},
            {"notify": (OTHER,), "notify_after": 1, "pause_after": 1},
            True,
            [
                (E.AUTO_PAUSED, OTHER),
                (E.FAILING, OTHER),
            ],
        ),
    ],
    ids=["alerts removed", "webhook replaced", "alerts added"],
)
async def test_a_finish_alerts_by_the_declaration_as_it_is_when_the_call_ends(
    store: Store,
    claimed_with: dict[str, Any],
    finished_with: dict[str, Any],
    paused: bool,
    events: list[tuple[AlertEvent, str]],
) -> None:
    """Re-applied while the call was under way: the finish pauses and notifies by the new
    declaration, never by the one the worker claimed."""
    endpoint_id = await _declare(store, **claimed_with)
    claim = await claim_one(store, T0)
    await apply_to_catalog(
        store.catalog, [declaration("j", spec("e", **finished_with))], T0 + seconds(1)
    )

    await finish_one(store.claims, claim, "w1", FAILED, T0 + seconds(2))

    assert ((await store.catalog.get_endpoint(endpoint_id)).pause is not None) is paused
    assert _events(await store.notifications.list_notifications()) == events


async def test_a_finish_whose_lease_was_lost_writes_no_notification(store: Store) -> None:
    await _declare(store, notify=(HOOK,), notify_after=1)
    claim = await claim_one(store, T0)
    assert await store.claims.reap(T0 + seconds(LEASE_SECONDS + 1)) == 1

    with pytest.raises(LeaseLost):
        await finish_one(store.claims, claim, "w1", FAILED, T0 + seconds(LEASE_SECONDS + 2))

    assert await store.notifications.list_notifications() == []


async def test_concurrent_finishes_each_write_their_alerts(store: Store) -> None:
    await apply_to_catalog(
        store.catalog,
        [declaration("j", *(spec(f"e{i}", notify=(HOOK,), notify_after=1) for i in range(4)))],
        T0,
    )
    claims = await store.claims.claim_due(T0, "w1", LEASE_SECONDS, 10)

    await store.claims.finish_many([Finish(c, "w1", FAILED, T0, LEASE_SECONDS) for c in claims])

    found = await store.notifications.list_notifications()
    assert sorted(n.endpoint_id for n in found) == sorted(c.endpoint.id for c in claims)
    assert {n.event for n in found} == {E.FAILING}


async def test_a_dag_upstream_failing_writes_its_alert(store: Store) -> None:
    specs = [
        spec("fetch", notify=(HOOK,), notify_after=1),
        spec("load", depends_on=("fetch",), schedule=Schedule()),
    ]
    await apply_to_catalog(store.catalog, [declaration("etl", *with_dependants(specs))], T0)
    claim = await claim_one(store, T0)

    recorded = await record_one(store.claims, Finish(claim, "w1", FAILED, T0, LEASE_SECONDS))
    run, started = recorded.run, recorded.started

    [alert] = await store.notifications.list_notifications()
    assert (alert.event, alert.endpoint_id, started) == (E.FAILING, claim.endpoint.id, [])
    assert alert.payload["last_run"]["id"] == run.id


# --- the repository the notifier uses ------------------------------------------------------


async def _alerts(store: Store, *urls: str, job: str = "j", name: str = "e") -> list[Notification]:
    """A `failing` notification per URL, raised by one failed run at T0."""
    await apply_to_catalog(
        store.catalog, [declaration(job, spec(name, notify=urls, notify_after=1))], T0
    )
    claim = await claim_one(store, T0)
    await finish_one(store.claims, claim, "w1", FAILED, T0)
    found = await store.notifications.list_notifications(
        endpoint_id=claim.endpoint.id, limit=len(urls)
    )
    return sorted(found, key=lambda n: n.id)


async def test_claim_leases_due_rows_to_one_worker_until_the_lease_expires(store: Store) -> None:
    rows = await _alerts(store, HOOK, OTHER)

    claimed = await store.notifications.claim_due(T0, "n1", 60.0, 10)
    again = await store.notifications.claim_due(T0 + seconds(59), "n2", 60.0, 10)
    expired = await store.notifications.claim_due(T0 + seconds(61), "n2", 60.0, 1)

    assert sorted(n.id for n in claimed) == [n.id for n in rows]
    assert {(n.lease_owner, n.lease_until) for n in claimed} == {("n1", T0 + seconds(60))}
    assert again == []
    assert len(expired) == 1
    assert expired[0].lease_owner == "n2"
    assert await store.notifications.claim_due(T0 + seconds(61), "n3", 60.0, 0) == []


async def test_nothing_is_due_before_its_next_attempt(store: Store) -> None:
    await _alerts(store, HOOK)

    assert await store.notifications.claim_due(T0 - seconds(1), "n1", 60.0, 10) == []


async def test_concurrent_claimers_never_share_a_row(store: Store) -> None:
    await _alerts(store, *(f"https://hooks.example.com/{i}" for i in range(8)))

    a, b = await asyncio.gather(
        store.notifications.claim_due(T0, "a", 60.0, 5),
        store.notifications.claim_due(T0, "b", 60.0, 5),
    )

    assert not {n.id for n in a} & {n.id for n in b}
    assert len(a) + len(b) == 8


async def test_delivered_counts_the_attempt_and_frees_the_lease(store: Store) -> None:
    [row] = await _alerts(store, HOOK)
    await store.notifications.claim_due(T0, "n1", 60.0, 10)

    assert await store.notifications.mark_delivered(row.id, "n2", T0 + seconds(1)) is False
    assert await store.notifications.mark_delivered(row.id, "n1", T0 + seconds(1)) is True
    assert await store.notifications.mark_delivered(row.id, "n1", T0 + seconds(2)) is False

    [stored] = await store.notifications.list_notifications()
    assert (stored.status, stored.attempts, stored.delivered_at) == (
        NotificationStatus.DELIVERED,
        1,
        T0 + seconds(1),
    )
    assert (stored.lease_owner, stored.lease_until) == (None, None)
    assert await store.notifications.claim_due(T0 + seconds(999), "n1", 60.0, 10) == []


async def test_failed_attempts_wait_for_their_retry_then_give_up(store: Store) -> None:
    [row] = await _alerts(store, HOOK)
    await store.notifications.claim_due(T0, "n1", 60.0, 10)

    assert await store.notifications.mark_failed(row.id, "n1", "HTTP 500", T0 + seconds(2), T0)
    [retrying] = await store.notifications.list_notifications()
    assert (retrying.status, retrying.attempts, retrying.last_error) == (
        NotificationStatus.PENDING,
        1,
        "HTTP 500",
    )
    assert retrying.next_attempt_at == T0 + seconds(2)
    assert await store.notifications.claim_due(T0 + seconds(1), "n1", 60.0, 10) == []
    [claimed] = await store.notifications.claim_due(T0 + seconds(2), "n1", 60.0, 10)
    assert claimed.attempts == 1

    assert await store.notifications.mark_failed(
        row.id, "n1", "connection: refused", None, T0 + seconds(3)
    )
    [given_up] = await store.notifications.list_notifications()
    assert (given_up.status, given_up.attempts, given_up.last_error) == (
        NotificationStatus.FAILED,
        2,
        "connection: refused",
    )
    assert await store.notifications.claim_due(T0 + seconds(9999), "n1", 60.0, 10) == []


async def test_listing_filters_and_goes_newest_first(store: Store) -> None:
    [first] = await _alerts(store, HOOK, job="a")
    await apply_to_catalog(
        store.catalog, [declaration("b", spec("f", notify=(HOOK,), notify_after=1))], T0
    )
    claim = await claim_one(store, T0 + seconds(5))
    await finish_one(store.claims, claim, "w1", FAILED, T0 + seconds(5))
    [second] = await store.notifications.list_notifications(endpoint_id=claim.endpoint.id)
    await store.notifications.claim_due(T0 + seconds(5), "n1", 60.0, 1)
    await store.notifications.mark_delivered(first.id, "n1", T0 + seconds(6))

    listed = store.notifications.list_notifications
    assert [n.id for n in await listed()] == [second.id, first.id]
    assert [n.id for n in await listed(limit=1)] == [second.id]
    assert [n.id for n in await listed(job_id=first.job_id)] == [first.id]
    assert [n.id for n in await listed(status=NotificationStatus.PENDING)] == [second.id]
    assert [n.id for n in await listed(status=NotificationStatus.DELIVERED)] == [first.id]
    assert await listed(status=NotificationStatus.FAILED) == []


async def test_a_notification_is_found_by_its_whole_id_only(store: Store) -> None:
    [raised] = await _alerts(store, HOOK)
    delivered = await store.notifications.claim_due(T0 + seconds(5), "n1", 60.0, 1)
    await store.notifications.mark_delivered(raised.id, "n1", T0 + seconds(6))

    found = await store.notifications.get_notification(raised.id)
    assert (found.id, found.status, found.url) == (raised.id, NotificationStatus.DELIVERED, HOOK)
    assert found.attempts == delivered[0].attempts + 1
    for unknown in (raised.id[:8], "0" * len(raised.id)):
        with pytest.raises(NotificationNotFound):
            await store.notifications.get_notification(unknown)
