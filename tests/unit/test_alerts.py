"""Failure alerts and auto-pause, pure: which events a run raises (through the very transition
every store applies), the JSON a webhook receives, and the delivery backoff."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cronpilot.domain.alerts.alerts import (
    MAX_TEXT,
    AlertEvent,
    DeliveryPolicy,
    NotificationStatus,
    delivered_settlement,
    delivery_error,
    failed_settlement,
    proposal_notifications,
    run_events,
    run_notifications,
    settled,
)
from cronpilot.domain.model import (
    Endpoint,
    EndpointSpec,
    ErrorKind,
    Pause,
    Response,
    Run,
    RunStatus,
    RunTrigger,
    Schedule,
    ScheduleSource,
)
from cronpilot.domain.planning.planning import Proposal, ProposalKind, ProposalStatus
from cronpilot.domain.runs.transitions import after_slot, with_pause

NOW = datetime(2030, 3, 1, 12, 0, tzinfo=UTC)
HOOK = "https://hooks.example.com/alerts"
E = AlertEvent


def t(seconds: float) -> datetime:
    return NOW + timedelta(seconds=seconds)


def _endpoint(**spec: Any) -> Endpoint:
    base = EndpointSpec(
        "probe",
        "https://api.example.com/probe?token=sekrit",
        Schedule(interval_seconds=60),
        headers={"Authorization": "Bearer sekrit"},
        notify=(HOOK,),
    )
    return Endpoint("ep-1", "job-1", "shop", replace(base, **spec))


def _run(endpoint: Endpoint, slot: datetime, ok: bool | None, error: str | None = None) -> Run:
    status = {True: RunStatus.SUCCESS, False: RunStatus.FAILED, None: RunStatus.ABANDONED}[ok]
    return Run(
        id=f"run-{slot:%H%M%S}",
        endpoint_id=endpoint.id,
        job_id=endpoint.job_id,
        trace_id="trace",
        trigger=RunTrigger.SCHEDULE,
        schedule_source=ScheduleSource.BASELINE,
        status=status,
        slot_at=slot,
        started_at=slot,
        worker_id="w1",
        finished_at=slot + timedelta(seconds=1),
        status_code=200 if ok else 503,
        error_kind=None if ok else ErrorKind.HTTP_STATUS,
        error_message=error if error is not None else (None if ok else "HTTP 503 Unavailable"),
    )


def _play(endpoint: Endpoint, outcomes: str) -> tuple[Endpoint, list[list[AlertEvent]]]:
    """Finish one slot per letter (F failed, S succeeded, A abandoned), as a store does; the
    events of each slot in order."""
    raised = []
    for i, letter in enumerate(outcomes):
        slot = t(60 * i)
        ok = {"S": True, "F": False, "A": None}[letter]
        after = after_slot(endpoint, slot, ok, slot + timedelta(seconds=1))
        raised.append(run_events(endpoint, after, _run(endpoint, slot, ok)))
        endpoint = after
    return endpoint, raised


@pytest.mark.parametrize(
    ("notify_after", "outcomes", "events"),
    [
        (3, "FF", [[], []]),
        (3, "FFF", [[], [], [E.FAILING]]),
        (3, "FFFF", [[], [], [E.FAILING], []]),
        (3, "FFFFFFFF", [[], [], [E.FAILING], [], [], [], [], []]),
        (3, "FFFFS", [[], [], [E.FAILING], [], [E.RECOVERED]]),
        (3, "FFFSS", [[], [], [E.FAILING], [E.RECOVERED], []]),
        (3, "FFS", [[], [], []]),
        (3, "FFFSFFF", [[], [], [E.FAILING], [E.RECOVERED], [], [], [E.FAILING]]),
        (3, "FFAF", [[], [], [], [E.FAILING]]),
        (3, "FFFA", [[], [], [E.FAILING], []]),
        (1, "FFS", [[E.FAILING], [], [E.RECOVERED]]),
        (1, "SS", [[], []]),
    ],
)
def test_a_streak_notifies_once_and_its_end_once(
    notify_after: int, outcomes: str, events: list[list[AlertEvent]]
) -> None:
    _, raised = _play(_endpoint(notify_after=notify_after), outcomes)

    assert raised == events


@pytest.mark.parametrize(
    ("pause_after", "outcomes", "events", "paused"),
    [
        (5, "FFFF", [[], [], [E.FAILING], []], False),
        (5, "FFFFF", [[], [], [E.FAILING], [], [E.AUTO_PAUSED]], True),
        (3, "FFF", [[], [], [E.FAILING, E.AUTO_PAUSED]], True),
        (1, "F", [[E.AUTO_PAUSED]], True),
        (None, "F" * 20, [[], [], [E.FAILING]] + [[]] * 17, False),
    ],
)
def test_the_streak_reaching_pause_after_pauses_the_endpoint(
    pause_after: int | None, outcomes: str, events: list[list[AlertEvent]], paused: bool
) -> None:
    endpoint, raised = _play(_endpoint(pause_after=pause_after), outcomes)

    assert raised == events
    if paused:
        reason = f"auto-paused after {pause_after} consecutive failures"
        assert endpoint.pause == Pause(reason, by="scheduler")
        assert (endpoint.next_run_at, endpoint.next_run_source) == (None, ScheduleSource.PAUSED)
    else:
        assert endpoint.pause is None
        assert endpoint.next_run_at is not None


def test_resuming_keeps_the_streak_so_one_more_failure_pauses_again() -> None:
    paused, _ = _play(_endpoint(pause_after=2, notify_after=2), "FF")
    resumed = with_pause(paused, None, t(600))
    assert (resumed.pause, resumed.failure_count) == (None, 2)

    again, [raised] = _play(resumed, "F")
    assert raised == [E.AUTO_PAUSED]
    assert again.pause == Pause("auto-paused after 3 consecutive failures", by="scheduler")

    recovered, [raised] = _play(with_pause(again, None, t(900)), "S")
    assert raised == [E.RECOVERED]
    assert (recovered.pause, recovered.failure_count) == (None, 0)


def test_a_pause_in_force_is_kept_and_raises_no_auto_pause() -> None:
    by_hand = Pause("maintenance", until=t(3600))
    endpoint = replace(_endpoint(pause_after=1), pause=by_hand)

    after, raised = _play(endpoint, "F")

    assert (after.pause, raised) == (by_hand, [[]])


def test_an_expired_pause_does_not_stop_the_auto_pause() -> None:
    endpoint = replace(_endpoint(pause_after=1), pause=Pause("over", until=t(-10)))

    after, raised = _play(endpoint, "F")

    assert (after.pause, raised) == (
        Pause("auto-paused after 1 consecutive failures", by="scheduler"),
        [[E.AUTO_PAUSED]],
    )


def test_an_abandoned_run_never_pauses() -> None:
    endpoint = replace(_endpoint(pause_after=1), failure_count=4)

    after, raised = _play(endpoint, "A")

    assert (after.pause, after.failure_count, raised) == (None, 4, [[]])


def test_one_notification_per_event_and_url_sharing_the_document() -> None:
    second = "https://other.example.com/hook"
    endpoint = replace(_endpoint(notify=(HOOK, second), pause_after=3), failure_count=2)
    run = _run(endpoint, NOW, ok=False)
    after = after_slot(endpoint, NOW, False, t(1))

    rows = run_notifications(endpoint, after, run, t(1))

    assert [(n.event, n.url) for n in rows] == [
        (E.FAILING, HOOK),
        (E.FAILING, second),
        (E.AUTO_PAUSED, HOOK),
        (E.AUTO_PAUSED, second),
    ]
    assert rows[0].payload == rows[1].payload
    assert rows[0].payload["id"] != rows[2].payload["id"]
    assert {(n.endpoint_id, n.job_id, n.created_at, n.next_attempt_at) for n in rows} == {
        ("ep-1", "job-1", t(1), t(1))
    }
    assert all((n.status.value, n.attempts) == ("pending", 0) for n in rows)


def test_an_attempt_settles_only_the_lease_it_holds() -> None:
    """The one settle rule every store follows (the SQL store in its UPDATE's WHERE)."""
    endpoint = replace(_endpoint(notify=(HOOK,), pause_after=3), failure_count=2)
    [raised, *_] = run_notifications(
        endpoint, after_slot(endpoint, NOW, False, t(1)), _run(endpoint, NOW, ok=False), t(1)
    )
    held = replace(raised, lease_owner="w1", lease_until=t(60))

    done = settled(held, "w1", delivered_settlement(t(2)))
    again = settled(held, "w1", failed_settlement("503", retry_at=t(30)))
    given_up = settled(held, "w1", failed_settlement("503", retry_at=None))

    assert done is not None and again is not None and given_up is not None
    assert (done.status, done.delivered_at, done.attempts) == (
        NotificationStatus.DELIVERED,
        t(2),
        1,
    )
    assert (again.status, again.next_attempt_at, again.last_error) == (
        NotificationStatus.PENDING,
        t(30),
        "503",
    )
    assert (given_up.status, given_up.next_attempt_at) == (NotificationStatus.FAILED, t(1))
    assert {(n.lease_owner, n.lease_until) for n in (done, again, given_up)} == {(None, None)}
    assert settled(held, "w2", delivered_settlement(t(2))) is None
    assert settled(done, "w1", delivered_settlement(t(3))) is None


def test_no_urls_no_notifications() -> None:
    endpoint = replace(_endpoint(notify=()), failure_count=2)
    after = after_slot(endpoint, NOW, False, t(1))

    assert run_events(endpoint, after, _run(endpoint, NOW, ok=False)) == [E.FAILING]
    assert run_notifications(endpoint, after, _run(endpoint, NOW, ok=False), t(1)) == []


def test_the_event_document_explains_without_secrets() -> None:
    endpoint = replace(_endpoint(), failure_count=2)
    long_error = "connection reset by https://user:pw@api.example.com/x?api_key=k " + "x" * 9000
    run = _run(endpoint, NOW, ok=False, error=long_error)
    after = after_slot(endpoint, NOW, False, t(1))

    [row] = run_notifications(endpoint, after, run, t(1))
    document = row.payload

    assert document == {
        "id": document["id"],
        "event": "failing",
        "job": "shop",
        "endpoint": "shop/probe",
        "endpoint_id": "ep-1",
        "at": t(1).isoformat(),
        "failure_count": 3,
        "paused": None,
        "last_run": {
            "id": run.id,
            "status": "failed",
            "status_code": 503,
            "error_kind": "http_status",
            "error": document["last_run"]["error"],
            "slot_at": NOW.isoformat(),
            "started_at": NOW.isoformat(),
            "finished_at": t(1).isoformat(),
        },
        "proposal": None,
        "approval": None,
    }
    error = document["last_run"]["error"]
    assert error.startswith("connection reset by https://****@api.example.com/x?api_key=****")
    assert error.endswith(f"({len(long_error)} characters)")
    assert len(error) < MAX_TEXT + 40
    text = json.dumps(document)
    assert "sekrit" not in text
    assert "pw@" not in text
    assert "Authorization" not in text


def _proposal(status: ProposalStatus) -> Proposal:
    return Proposal(
        id="p-1",
        endpoint_id="ep-1",
        job_id="job-1",
        kind=ProposalKind.INTERVAL,
        reason="responses unchanged for an hour",
        proposed_by="heuristic",
        created_at=NOW,
        status=status,
        interval_seconds=300.0,
        ttl_seconds=3600.0,
        expires_at=t(3600),
    )


def test_a_proposal_held_for_review_raises_proposal_pending() -> None:
    [row] = proposal_notifications(_endpoint(), _proposal(ProposalStatus.PENDING), NOW)

    assert (row.event, row.url) == (E.PROPOSAL_PENDING, HOOK)
    assert row.payload["last_run"] is None
    assert row.payload["proposal"] == {
        "id": "p-1",
        "kind": "interval",
        "reason": "responses unchanged for an hour",
        "proposed_by": "heuristic",
        "interval_seconds": 300.0,
        "at": None,
        "ttl_seconds": 3600.0,
        "expires_at": t(3600).isoformat(),
    }


@pytest.mark.parametrize(
    "status", [ProposalStatus.APPLIED, ProposalStatus.REFUSED, ProposalStatus.REJECTED]
)
def test_a_decided_proposal_raises_nothing(status: ProposalStatus) -> None:
    assert proposal_notifications(_endpoint(), _proposal(status), NOW) == []


@pytest.mark.parametrize(
    ("attempts_made", "delay"),
    [(1, 2.0), (2, 10.0), (3, 50.0), (4, 250.0), (5, 600.0), (6, None), (9, None)],
)
def test_delivery_backs_off_exponentially_then_gives_up(
    attempts_made: int, delay: float | None
) -> None:
    retry_at = DeliveryPolicy().retry_at(attempts_made, NOW)

    assert retry_at == (None if delay is None else t(delay))


@pytest.mark.parametrize(
    ("response", "error"),
    [
        (Response(status_code=200), None),
        (Response(status_code=204), None),
        (
            Response(
                status_code=500,
                error_kind=ErrorKind.HTTP_STATUS,
                error_message="HTTP 500 Internal Server Error",
            ),
            "HTTP 500 Internal Server Error",
        ),
        (Response(status_code=302), "HTTP 302"),
        (
            Response(
                status_code=None,
                error_kind=ErrorKind.BLOCKED_ADDRESS,
                error_message="refused http://169.254.169.254/: link-local",
            ),
            "blocked_address: refused http://169.254.169.254/: link-local",
        ),
    ],
)
def test_only_a_2xx_answer_delivers(response: Response, error: str | None) -> None:
    assert delivery_error(response) == error
