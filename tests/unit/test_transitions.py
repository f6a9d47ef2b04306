"""Pure endpoint state changes: what finishing a slot and re-planning do to runtime state."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from cronpilot.domain.model import (
    Endpoint,
    IntervalHint,
    NextRun,
    OneShotHint,
    Pause,
    ScheduleSource,
)
from cronpilot.domain.runs.claiming import is_due
from cronpilot.domain.runs.transitions import after_slot, replanned, with_hints, with_pause
from cronpilot.domain.schedule.governor import plan_next_run

MakeEndpoint = Callable[..., Endpoint]
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
S = ScheduleSource


def t(seconds: float) -> datetime:
    return NOW + timedelta(seconds=seconds)


@pytest.mark.parametrize(
    ("succeeded", "failures_after"), [(True, 0), (False, 4), (None, 3)], ids=str
)
def test_after_slot_failure_streak(
    make_endpoint: MakeEndpoint, succeeded: bool | None, failures_after: int
) -> None:
    endpoint = make_endpoint(failure_count=3, last_slot_at=t(-60))

    done = after_slot(endpoint, NOW, succeeded, t(1))

    assert done.failure_count == failures_after


@pytest.mark.parametrize(
    ("previous", "slot", "last_after"),
    [
        (None, NOW, NOW),
        (t(-60), NOW, NOW),
        (NOW, NOW, NOW),
        (NOW, t(-60), NOW),
    ],
    ids=["first slot", "later slot", "same slot", "earlier slot"],
)
def test_last_slot_never_moves_backwards(
    make_endpoint: MakeEndpoint, previous: datetime | None, slot: datetime, last_after: datetime
) -> None:
    endpoint = make_endpoint(last_slot_at=previous)

    assert after_slot(endpoint, slot, True, t(1)).last_slot_at == last_after


def test_after_slot_releases_the_lease_and_plans_from_the_slot(
    make_endpoint: MakeEndpoint,
) -> None:
    endpoint = make_endpoint(interval=60, lease_owner="worker-a", lease_until=t(30))

    done = after_slot(endpoint, NOW, True, t(45))

    assert (done.lease_owner, done.lease_until) == (None, None)
    assert (done.next_run_at, done.next_run_source) == (t(60), S.BASELINE)


def test_a_failed_slot_is_planned_with_backoff(make_endpoint: MakeEndpoint) -> None:
    done = after_slot(make_endpoint(interval=60, failure_count=1), NOW, False, t(2))

    assert (done.next_run_at, done.next_run_source) == (t(240), S.BACKOFF)


@pytest.mark.parametrize(
    ("shot_at", "consumed"),
    [(t(-5), True), (NOW, True), (t(5), False)],
    ids=["before the slot", "at the slot", "after the slot"],
)
def test_a_one_shot_hint_is_consumed_by_the_slot_it_fired(
    make_endpoint: MakeEndpoint, shot_at: datetime, consumed: bool
) -> None:
    hint = OneShotHint(at=shot_at, expires_at=t(3600), reason="spike")
    endpoint = make_endpoint(interval=60, oneshot_hint=hint)

    done = after_slot(endpoint, NOW, True, t(1))

    assert done.oneshot_hint == (None if consumed else hint)


def test_one_shot_fires_once_then_the_baseline_resumes(make_endpoint: MakeEndpoint) -> None:
    hint = OneShotHint(at=t(20), expires_at=t(3600), reason="check after deploy")
    endpoint = replanned(make_endpoint(interval=60, last_slot_at=NOW, oneshot_hint=hint), t(1))
    assert (endpoint.next_run_at, endpoint.next_run_source) == (t(20), S.HINT_ONESHOT)

    done = after_slot(endpoint, t(20), True, t(21))

    assert done.oneshot_hint is None
    assert (done.next_run_at, done.next_run_source) == (t(80), S.BASELINE)


def test_replanned_drops_what_is_stale_and_keeps_what_is_fresh(
    make_endpoint: MakeEndpoint,
) -> None:
    endpoint = make_endpoint(
        interval=60,
        last_slot_at=NOW,
        interval_hint=IntervalHint(10, expires_at=t(0), reason="expired at now"),
        oneshot_hint=OneShotHint(at=t(5), expires_at=t(-1), reason="expired"),
        pause=Pause("ended", until=t(0)),
    )

    fresh = replanned(endpoint, NOW)

    assert (fresh.interval_hint, fresh.oneshot_hint, fresh.pause) == (None, None, None)
    assert (fresh.next_run_at, fresh.next_run_source) == (t(60), S.BASELINE)


@pytest.mark.parametrize(
    "state",
    [
        {"interval_hint": IntervalHint(10, expires_at=t(1), reason="fresh")},
        {"oneshot_hint": OneShotHint(at=t(5), expires_at=t(1), reason="fresh")},
        {"pause": Pause("timed", until=t(1))},
        {"pause": Pause("by hand")},
    ],
    ids=["interval hint", "one-shot hint", "timed pause", "open pause"],
)
def test_replanned_keeps_fresh_state_and_plans_with_it(
    make_endpoint: MakeEndpoint, state: dict[str, object]
) -> None:
    endpoint = make_endpoint(interval=60, last_slot_at=NOW, **state)

    fresh = replanned(endpoint, NOW)

    assert replace(fresh, next_run_at=None, next_run_source=S.BASELINE) == replace(
        endpoint, next_run_at=None
    )
    assert NextRun(fresh.next_run_at, fresh.next_run_source) == plan_next_run(endpoint, NOW)
    assert fresh.next_run_source is not S.BASELINE


def test_pause_and_resume_replan(make_endpoint: MakeEndpoint) -> None:
    endpoint = make_endpoint(interval=60, last_slot_at=NOW)

    paused = with_pause(endpoint, Pause("incident"), t(1))
    resumed = with_pause(paused, None, t(90))

    assert (paused.next_run_at, paused.next_run_source) == (None, S.PAUSED)
    assert (resumed.next_run_at, resumed.next_run_source) == (t(90), S.BASELINE)


def test_with_hints_replaces_both_hints_and_replans(make_endpoint: MakeEndpoint) -> None:
    old = OneShotHint(at=t(5), expires_at=t(600), reason="old")
    endpoint = make_endpoint(interval=60, last_slot_at=NOW, oneshot_hint=old)
    hint = IntervalHint(15, expires_at=t(600), reason="busy")

    hinted = with_hints(endpoint, hint, None, t(1))

    assert (hinted.interval_hint, hinted.oneshot_hint) == (hint, None)
    assert (hinted.next_run_at, hinted.next_run_source) == (t(15), S.HINT_INTERVAL)


@pytest.mark.parametrize(
    ("next_run_at", "lease_owner", "due"),
    [
        (t(-1), None, True),
        (NOW, None, True),
        (t(1e-6), None, False),
        (None, None, False),
        (t(-1), "worker-a", False),
    ],
    ids=["overdue", "due now", "not yet", "paused", "leased"],
)
def test_is_due(
    make_endpoint: MakeEndpoint, next_run_at: datetime | None, lease_owner: str | None, due: bool
) -> None:
    endpoint = make_endpoint(next_run_at=next_run_at, lease_owner=lease_owner)

    assert is_due(endpoint, NOW) is due
