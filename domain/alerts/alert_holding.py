"""Alerts that know the DAG: a dependant's `missed`, `late` and `failing` raised while
one of its upstreams fails or is paused are held, "blocked by etl/fetch", instead of paging once
per dependant: the cause pages once, through the upstream's own alerts.

A held notification is kept in the outbox with its reason (`Notification.held_by`), listed by
`notifications list`, the API and the console, and never delivered. The rule reads the upstreams'
state when the alert is written, so the upstream's `recovered` releases its dependants: what they
raise after it pages again. Every store applies `held` where it writes notifications.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime

from cronpilot.domain.alerts.alerts import AlertEvent, Notification, NotificationStatus
from cronpilot.domain.model import Endpoint
from cronpilot.domain.schedule.pauses import holds, job_holds

HELD_EVENTS = frozenset({AlertEvent.MISSED, AlertEvent.LATE, AlertEvent.FAILING})
"""What a blocked upstream explains; a dependant's other events page as ever."""


def may_hold(raised: Sequence[Notification]) -> bool:
    """Whether any of `raised` could be held: a store reads the upstreams only then."""
    return any(n.event in HELD_EVENTS for n in raised)


def blocking(endpoint: Endpoint, others: Mapping[str, Endpoint], now: datetime) -> Endpoint | None:
    """The first upstream of `endpoint` (its `depends_on`, in order, found among `others` by
    id) that fails (its streak at its `notify_after`) or is paused (its own pause or its
    job's) at `now`; None when none blocks it."""
    upstreams = {e.spec.name: e for e in others.values() if e.job_id == endpoint.job_id}
    for name in endpoint.spec.depends_on:
        upstream = upstreams.get(name)
        if upstream is None:
            continue
        failing = upstream.failure_count >= upstream.spec.notify_after
        if failing or holds(upstream.pause, now) or job_holds(upstream, now):
            return upstream
    return None


def held(raised: Sequence[Notification], endpoints: Mapping[str, Endpoint]) -> list[Notification]:
    """`raised`, each of a dependant that an upstream blocks (`blocking`, at its creation)
    held by that upstream's reference; `endpoints` (by id) holds the raising endpoints and
    their upstreams, as stored."""
    kept = []
    for notification in raised:
        endpoint = endpoints.get(notification.endpoint_id)
        upstream = (
            blocking(endpoint, endpoints, notification.created_at)
            if notification.event in HELD_EVENTS and endpoint is not None
            else None
        )
        kept.append(
            notification
            if upstream is None
            else replace(notification, status=NotificationStatus.HELD, held_by=upstream.ref)
        )
    return kept
