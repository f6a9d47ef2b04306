"""Failure alerts and auto-pause: which events a finished run (or a proposal held for review, or
an approval asked for) raises, the JSON document each webhook receives, and how often a delivery
is tried.

Events are derived from the endpoint before and after the transition that recorded the run, so
every store raises exactly the same ones, and writes them (one notification per event and URL)
in the transaction that records the run: none is lost, none is sent for a run not recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum

from cronpilot.domain.access.access import SCHEDULER_ACTOR
from cronpilot.domain.access.secrets import mask_urls
from cronpilot.domain.alerts.notify_targets import (
    RESOLVING_EVENTS,
    NotifyTarget,
    address,
    dedup_key,
    receives,
)
from cronpilot.domain.model import (
    JSON,
    Endpoint,
    ErrorKind,
    Pause,
    Response,
    Run,
    RunStatus,
    new_id,
)
from cronpilot.domain.planning.approvals import Approval
from cronpilot.domain.planning.planning import Proposal, ProposalStatus

MAX_TEXT = 500
"""Longest error message or reason an event carries (a server's reason phrase can be huge)."""


class AlertEvent(StrEnum):
    FAILING = "failing"
    """The streak of consecutive failures reached `notify_after`: once per streak."""
    RECOVERED = "recovered"
    """A run succeeded after a streak that had raised `failing`."""
    AUTO_PAUSED = "auto_paused"
    """The streak reached `pause_after`, and the endpoint paused itself."""
    PROPOSAL_PENDING = "proposal_pending"
    """A planner proposal is held for an admin's review."""
    APPROVAL_PENDING = "approval_pending"
    """A DAG dependant with `approval: required` waits for an admin
    (`domain.planning.approvals`)."""
    MISSED = "missed"
    """A due slot had no run for `missed_after` (`domain.runs.watch`): once per episode."""
    LATE = "late"
    """A run started more than `late_after` after its slot: once per streak of late runs."""
    NO_WORKERS = "no_workers"
    """No scheduler worker was alive for a while (`domain.runs.watch`): once per gap."""
    TEST = "test"
    """Sent by hand to check that a webhook or target takes alerts (`notify test`)."""
    OVERRUNNING = "overrunning"
    """A call outlasted its interval and slots were skipped (`domain.schedule.overlap`): once per
    streak of such calls."""


class NotificationStatus(StrEnum):
    PENDING = "pending"
    """Not delivered yet: waiting for its next attempt."""
    DELIVERED = "delivered"
    FAILED = "failed"
    """Given up after the policy's last attempt."""
    HELD = "held"
    """Never sent: a DAG upstream of its endpoint was failing or paused (`held_by`;
    `domain.alerts.alert_holding`)."""


@dataclass(frozen=True, slots=True)
class Notification:
    """One event for one webhook URL: an outbox row, delivered at least once."""

    id: str
    endpoint_id: str
    job_id: str
    event: AlertEvent
    url: str
    payload: JSON
    created_at: datetime
    next_attempt_at: datetime
    status: NotificationStatus = NotificationStatus.PENDING
    attempts: int = 0
    last_error: str | None = None
    delivered_at: datetime | None = None
    lease_owner: str | None = None
    lease_until: datetime | None = None
    target: NotifyTarget | None = None
    """The `notify.targets` entry it goes to (`url` then says where, without secrets); None
    for a `notify.urls` webhook."""
    episode_key: str | None = None
    """The episode it belongs to and where it goes (`episode_key`): the rows of one key are
    delivered in order (`precedes`)."""
    held_by: str | None = None
    """The upstream (`job/endpoint`) that blocked its endpoint when it was raised: it is
    `held`, never sent (`domain.alerts.alert_holding`)."""


def deliverable(notification: Notification, now: datetime) -> bool:
    """Whether an alerts worker may take the notification at `now`: pending, its next attempt
    due, and no live lease on it. The SQL outbox mirrors it (`notifications_repo.claim_due`),
    proven by `tests/contract/test_rules_contract.py`."""
    lease = notification.lease_until
    return (
        notification.status is NotificationStatus.PENDING
        and notification.next_attempt_at <= now
        and (lease is None or lease < now)
    )


def episode_key(document: Mapping[str, JSON], url: str) -> str:
    """The key of an event's episode (`notify_targets.dedup_key`, which PagerDuty dedups on)
    at one destination (`url`, without secrets)."""
    return f"{dedup_key(document)} {url}"


def precedes(earlier: Notification, later: Notification) -> bool:
    """Whether `later` waits for `earlier`: both of one episode at one destination, `earlier`
    still pending (leased or waiting for a retry), and raised before it (or with it, when it
    opens what `later` resolves). So a `recovered` never overtakes its trigger, across retries
    and workers; a trigger given up (`failed`) no longer holds its `recovered` back. The SQL
    outbox says it as a `NOT EXISTS` in its claim (`notifications_repo.claim_due`)."""
    key = later.episode_key
    if key is None or earlier.episode_key != key or earlier.id == later.id:
        return False
    if earlier.status is not NotificationStatus.PENDING:
        return False
    return (earlier.created_at, _resolves(earlier)) < (later.created_at, _resolves(later))


def _resolves(notification: Notification) -> bool:
    return notification.event.value in RESOLVING_EVENTS


def delivery_order(notification: Notification) -> tuple[datetime, str]:
    """The order in which deliverable notifications are taken: earliest attempt first."""
    return notification.next_attempt_at, notification.id


def pause_after_failure(
    endpoint: Endpoint, failures: int, *, failed: bool, now: datetime
) -> Pause | None:
    """The pause `endpoint` has once a run has ended with its streak at `failures`: its own,
    or a new one when a failure leaves the streak at `pause_after` or more. A pause in force
    (by hand, by the planner) is kept as it is. Resuming does not reset the streak: a resumed
    endpoint that fails again pauses again at once."""
    limit = endpoint.spec.pause_after
    if not failed or limit is None or failures < limit or _paused(endpoint, now):
        return endpoint.pause
    return Pause(f"auto-paused after {failures} consecutive failures", by=SCHEDULER_ACTOR)


def _paused(endpoint: Endpoint, now: datetime) -> bool:
    pause = endpoint.pause
    return pause is not None and (pause.until is None or pause.until > now)


def run_events(before: Endpoint, after: Endpoint, run: Run) -> list[AlertEvent]:
    """The events of a run that moved `before` to `after` (`domain.runs.transitions.after_slot`).

    `failing` when the streak reaches `notify_after` (a failure that keeps failing raises
    nothing more), `recovered` when a success ends a streak that had raised `failing`, and
    `auto_paused` when the transition paused the endpoint. Abandoned runs raise nothing."""
    if run.status not in (RunStatus.SUCCESS, RunStatus.FAILED):
        return []
    threshold = after.spec.notify_after
    events = []
    if before.failure_count < threshold <= after.failure_count:
        events.append(AlertEvent.FAILING)
    if after.failure_count == 0 and before.failure_count >= threshold:
        events.append(AlertEvent.RECOVERED)
    if after.pause is not None and after.pause != before.pause:
        events.append(AlertEvent.AUTO_PAUSED)
    return events


def run_notifications(
    before: Endpoint, after: Endpoint, run: Run, now: datetime
) -> list[Notification]:
    """The outbox rows of a recorded run: one per event and webhook URL (none without URLs,
    which is the common case, and costs nothing more than this test)."""
    if not _notifies(after):
        return []
    raised = [
        notification
        for event in run_events(before, after, run)
        for notification in _fan_out(after, _document(event, after, now, last_run=run), now)
    ]
    # `late` when the run begins a streak of late runs, `recovered` when one in time ends it;
    # `overrunning` and its `recovered` alike for calls that outlast their interval.
    for kind, since_before, since_after in (
        (AlertEvent.LATE, before.late_since, after.late_since),
        (AlertEvent.OVERRUNNING, before.overrun_since, after.overrun_since),
    ):
        started = since_after or since_before
        if started is None or since_before == since_after:
            continue
        ended = None if since_after else now
        event = kind if ended is None else AlertEvent.RECOVERED
        raised += episode_notifications(
            event, after, Episode(kind, started, ended), now, last_run=run
        )
    return raised


@dataclass(frozen=True, slots=True)
class Episode:
    """What an episode's events say of it (`domain.runs.watch`): its kind (`missed`, `late`,
    `no_workers`), since when (the missed slot, the first late slot, the last heartbeat) and,
    once over, until when."""

    kind: AlertEvent
    started_at: datetime
    recovered_at: datetime | None = None

    def document(self) -> dict[str, JSON]:
        return {
            "kind": self.kind.value,
            "started_at": self.started_at.isoformat(),
            "recovered_at": _iso(self.recovered_at),
        }


def episode_notifications(
    event: AlertEvent,
    endpoint: Endpoint,
    episode: Episode,
    now: datetime,
    *,
    last_run: Run | None = None,
) -> list[Notification]:
    """The rows of an episode's event (its start, or `recovered`) for `endpoint`'s webhooks."""
    document = _document(event, endpoint, now, last_run=last_run, episode=episode)
    return _fan_out(endpoint, document, now)


def proposal_notifications(
    endpoint: Endpoint, proposal: Proposal, now: datetime
) -> list[Notification]:
    """`proposal_pending` rows for a proposal held for review; none for any other status."""
    if proposal.status is not ProposalStatus.PENDING or not _notifies(endpoint):
        return []
    document = _document(AlertEvent.PROPOSAL_PENDING, endpoint, now, proposal=proposal)
    return _fan_out(endpoint, document, now)


def approval_notifications(
    endpoint: Endpoint, approval: Approval, now: datetime
) -> list[Notification]:
    """`approval_pending` rows for an approval a gated dependant asked for."""
    if not _notifies(endpoint):
        return []
    document = _document(AlertEvent.APPROVAL_PENDING, endpoint, now, approval=approval)
    return _fan_out(endpoint, document, now)


def test_notifications(endpoint: Endpoint, now: datetime) -> list[Notification]:
    """A `test` event for each webhook and target of `endpoint`, whatever events each
    receives: what `notify test` writes to the outbox."""
    spec = endpoint.spec
    everywhere = replace(
        spec, notify_targets=tuple(replace(t, events=()) for t in spec.notify_targets)
    )
    sent = replace(endpoint, spec=everywhere)
    return _fan_out(sent, _document(AlertEvent.TEST, endpoint, now), now)


def redelivered(notification: Notification, now: datetime) -> Notification:
    """`notification` sent again from `now` (`notifications redeliver`): pending, with a fresh
    set of attempts, its lease and its hold dropped; one still pending is left as it is."""
    if notification.status is NotificationStatus.PENDING:
        return notification
    return replace(
        notification,
        status=NotificationStatus.PENDING,
        attempts=0,
        next_attempt_at=now,
        delivered_at=None,
        lease_owner=None,
        lease_until=None,
        held_by=None,
    )


@dataclass(frozen=True, slots=True)
class Settlement:
    """What one delivery attempt writes on its notification, besides counting the attempt and
    freeing the lease; a failure to retry keeps the row pending, and a final outcome keeps its
    `next_attempt_at`."""

    status: NotificationStatus = NotificationStatus.PENDING
    delivered_at: datetime | None = None
    last_error: str | None = None
    next_attempt_at: datetime | None = None

    def changes(self) -> dict[str, object]:
        """The fields it sets, for a store that writes them as columns."""
        fields = {
            "status": self.status,
            "delivered_at": self.delivered_at,
            "last_error": self.last_error,
            "next_attempt_at": self.next_attempt_at,
        }
        return {
            name: value
            for name, value in fields.items()
            if value is not None and not (name == "status" and value is NotificationStatus.PENDING)
        }


def delivered_settlement(now: datetime) -> Settlement:
    return Settlement(status=NotificationStatus.DELIVERED, delivered_at=now)


def failed_settlement(error: str, retry_at: datetime | None) -> Settlement:
    """A failed attempt: tried again at `retry_at`, or given up (`failed`) without one."""
    if retry_at is None:
        return Settlement(status=NotificationStatus.FAILED, last_error=error)
    return Settlement(last_error=error, next_attempt_at=retry_at)


def settled(
    notification: Notification, worker_id: str, settlement: Settlement
) -> Notification | None:
    """`notification` after an attempt by `worker_id`: `settlement` written, the attempt
    counted, the lease freed. None when the worker no longer holds it (its lease lapsed and
    another took it) or it is no longer pending: the attempt then changes nothing. The SQL
    outbox says the same fence in its UPDATE's WHERE (`SqlNotifications._settle`)."""
    if notification.lease_owner != worker_id:
        return None
    if notification.status is not NotificationStatus.PENDING:
        return None
    return replace(
        notification,
        status=settlement.status,
        delivered_at=settlement.delivered_at or notification.delivered_at,
        last_error=notification.last_error
        if settlement.last_error is None
        else settlement.last_error,
        next_attempt_at=settlement.next_attempt_at or notification.next_attempt_at,
        attempts=notification.attempts + 1,
        lease_owner=None,
        lease_until=None,
    )


def _notifies(endpoint: Endpoint) -> bool:
    return bool(endpoint.spec.notify or endpoint.spec.notify_targets)


def _fan_out(endpoint: Endpoint, document: dict[str, JSON], now: datetime) -> list[Notification]:
    """One row per webhook URL, and one per target that receives the event."""
    event = AlertEvent(document["event"])
    spec = endpoint.spec
    destinations: list[tuple[str, NotifyTarget | None]] = [(url, None) for url in spec.notify]
    destinations += [(address(t), t) for t in spec.notify_targets if receives(t, event)]
    return [
        Notification(
            id=new_id(),
            endpoint_id=endpoint.id,
            job_id=endpoint.job_id,
            event=event,
            url=url,
            payload=document,
            created_at=now,
            next_attempt_at=now,
            target=target,
            episode_key=episode_key(document, url),
        )
        for url, target in destinations
    ]


def _document(
    event: AlertEvent,
    endpoint: Endpoint,
    now: datetime,
    *,
    last_run: Run | None = None,
    proposal: Proposal | None = None,
    approval: Approval | None = None,
    episode: Episode | None = None,
) -> dict[str, JSON]:
    """The JSON a webhook receives. `id` is the event's, shared by its URLs, so that a receiver
    can drop a repeated delivery. Never headers, URLs or bodies: only what identifies the
    endpoint and explains the event, with error texts masked and cut."""
    pause = endpoint.pause
    document: dict[str, JSON] = {
        "id": new_id(),
        "event": event.value,
        "job": endpoint.job_name,
        "endpoint": endpoint.ref,
        "endpoint_id": endpoint.id,
        "at": now.isoformat(),
        "failure_count": endpoint.failure_count,
        "paused": None if pause is None else {"reason": pause.reason, "until": _iso(pause.until)},
        "last_run": None if last_run is None else _run_document(last_run),
        "proposal": None if proposal is None else _proposal_document(proposal),
        "approval": None if approval is None else _approval_document(approval),
    }
    if episode is not None:
        # Only on the events of an episode (`domain.runs.watch`): `recovered` ends one or a streak.
        document["episode"] = episode.document()
    return document


def _run_document(run: Run) -> dict[str, JSON]:
    return {
        "id": run.id,
        "status": run.status.value,
        "status_code": run.status_code,
        "error_kind": None if run.error_kind is None else run.error_kind.value,
        "error": None if run.error_message is None else cut(mask_urls(run.error_message)),
        "slot_at": run.slot_at.isoformat(),
        "started_at": run.started_at.isoformat(),
        "finished_at": _iso(run.finished_at),
    }


def _proposal_document(proposal: Proposal) -> dict[str, JSON]:
    return {
        "id": proposal.id,
        "kind": proposal.kind.value,
        "reason": cut(proposal.reason),
        "proposed_by": proposal.proposed_by,
        "interval_seconds": proposal.interval_seconds,
        "at": _iso(proposal.at),
        "ttl_seconds": proposal.ttl_seconds,
        "expires_at": _iso(proposal.expires_at),
    }


def _approval_document(approval: Approval) -> dict[str, JSON]:
    return {
        "id": approval.id,
        "dag_run_id": approval.dag_run_id,
        "parent_run_id": approval.parent_run_id,
        "requested_at": approval.requested_at.isoformat(),
        "expires_at": approval.expires_at.isoformat(),
        "approve": f"cronpilot approvals approve {approval.id}",
    }


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def cut(text: str) -> str:
    """`text` within `MAX_TEXT` characters, saying how long it was when it is cut."""
    if len(text) <= MAX_TEXT:
        return text
    return f"{text[:MAX_TEXT]}… ({len(text)} characters)"


# --- delivery ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeliveryPolicy:
    """How often a notification is tried: exponential backoff, `first_delay_seconds` after the
    first failed attempt, times `multiplier` after each further one, capped; given up after
    `attempts` attempts (by default 2 s, 10 s, 50 s, 250 s, 600 s: about 15 minutes)."""

    attempts: int = 6
    first_delay_seconds: float = 2.0
    multiplier: float = 5.0
    max_delay_seconds: float = 600.0

    def retry_at(self, attempts_made: int, now: datetime) -> datetime | None:
        """When to try again after `attempts_made` attempts (the last one failed, at `now`);
        None once they are all spent."""
        if attempts_made >= self.attempts:
            return None
        delay = self.first_delay_seconds * self.multiplier ** max(attempts_made - 1, 0)
        return now + timedelta(seconds=min(delay, self.max_delay_seconds))


def delivery_error(response: Response) -> str | None:
    """Why a delivery failed, or None when the webhook took it (a 2xx answer)."""
    code = response.status_code
    if response.error_kind is None and code is not None and 200 <= code < 300:
        return None
    if response.error_kind is not None and response.error_kind is not ErrorKind.HTTP_STATUS:
        return cut(mask_urls(f"{response.error_kind.value}: {response.error_message or ''}"))
    return cut(mask_urls(response.error_message or f"HTTP {code}"))
