"""What an endpoint's answer may change in its schedule: `Retry-After` holds the next run back
(bounded by max_interval), whoever made the call; `Cronpilot-Next-Run` becomes a hint of
source `endpoint` when the endpoint opted in, within the clamps, from the answer to a slot of
the schedule; the rest is ignored and said so."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cronpilot.domain.model import (
    Endpoint,
    EndpointSpec,
    HintSource,
    IntervalHint,
    OneShotHint,
    Response,
    Schedule,
    ScheduleSource,
    Steering,
)
from cronpilot.domain.runs.requested_runs import manual_run
from cronpilot.domain.runs.transitions import after_call, after_finish, after_slot, replanned
from cronpilot.domain.schedule.governor import plan_next_run
from cronpilot.domain.schedule.steering import ENDPOINT_HINT_TTL, heeded, steered

NOW = datetime(2030, 1, 7, 12, 0, tzinfo=UTC)


def t(seconds: float) -> datetime:
    return NOW + timedelta(seconds=seconds)


def endpoint(**spec_fields: Any) -> Endpoint:
    """Every 60 s, last slot at NOW (the slot that just ran)."""
    spec_fields.setdefault("schedule", Schedule(interval_seconds=60))
    spec = EndpointSpec(name="probe", url="https://example.com/probe", **spec_fields)
    return Endpoint(id="e1", job_id="j1", job_name="job", spec=spec, last_slot_at=NOW)


def answer(status: int = 200, **steering: Any) -> Response:
    return Response(status_code=status, steering=Steering(**steering) if steering else None)


def test_a_retry_after_moves_the_next_run_to_that_time() -> None:
    ended = after_call(endpoint(), NOW, answer(429, retry_after_seconds=300), NOW)

    assert ended.retry_after_at == t(300)
    # Later than the failure backoff (120 s) too.
    assert (ended.next_run_at, ended.next_run_source) == (t(300), ScheduleSource.RETRY_AFTER)


def test_a_retry_after_sooner_than_the_plan_does_not_pull_the_run_earlier() -> None:
    ended = after_call(endpoint(), NOW, answer(503, retry_after_seconds=5), NOW)

    assert ended.retry_after_at == t(5)
    assert (ended.next_run_at, ended.next_run_source) == (t(120), ScheduleSource.BACKOFF)


def test_a_retry_after_is_bounded_by_max_interval() -> None:
    ended = after_call(
        endpoint(max_interval_seconds=90), NOW, answer(429, retry_after_seconds=600), NOW
    )

    assert (ended.next_run_at, ended.next_run_source) == (t(90), ScheduleSource.CLAMPED_MAX)
    # Still held back: the slot at t(90) is called, and its answer decides again.
    assert ended.retry_after_at == t(600)


def test_a_retry_after_beats_failure_backoff_and_hints_when_later() -> None:
    hinted = replace(
        endpoint(),
        failure_count=3,
        interval_hint=IntervalHint(10, t(3600), "busy"),
        oneshot_hint=OneShotHint(t(5), t(3600), "spike"),
        retry_after_at=t(900),
    )

    assert plan_next_run(hinted, NOW).at == t(900)


def test_the_slot_that_honours_a_retry_after_consumes_it() -> None:
    held = after_call(endpoint(), NOW, answer(429, retry_after_seconds=300), NOW)

    ended = after_call(held, t(300), answer(200), t(301))

    assert ended.retry_after_at is None
    assert (ended.next_run_at, ended.next_run_source) == (t(360), ScheduleSource.BASELINE)


def test_a_call_without_an_answer_keeps_the_retry_after() -> None:
    held = replace(endpoint(max_interval_seconds=30), retry_after_at=t(120))
    no_answer = Response(status_code=None)

    ended = after_call(held, NOW, no_answer, NOW)
    reaped = after_slot(held, NOW, None, NOW)

    assert ended.retry_after_at == reaped.retry_after_at == t(120)


def test_an_answer_without_retry_after_lifts_the_previous_one() -> None:
    held = replace(endpoint(max_interval_seconds=30), retry_after_at=t(120))

    ended = after_call(held, NOW, answer(200), NOW)

    assert ended.retry_after_at is None
    assert ended.next_run_at == t(30)


def test_a_duration_hint_from_an_endpoint_that_opted_in() -> None:
    ended = after_call(endpoint(accept_hints=True), NOW, answer(next_run_interval_seconds=20), NOW)

    assert ended.interval_hint == IntervalHint(
        20, NOW + ENDPOINT_HINT_TTL, "Cronpilot-Next-Run: every 20s", HintSource.ENDPOINT
    )
    assert (ended.next_run_at, ended.next_run_source) == (t(20), ScheduleSource.HINT_INTERVAL)


def test_a_time_hint_from_an_endpoint_that_opted_in() -> None:
    ended = after_call(endpoint(accept_hints=True), NOW, answer(next_run_at=t(15)), NOW)

    assert ended.oneshot_hint == OneShotHint(
        t(15),
        NOW + ENDPOINT_HINT_TTL,
        f"Cronpilot-Next-Run: at {t(15).isoformat()}",
        HintSource.ENDPOINT,
    )
    assert (ended.next_run_at, ended.next_run_source) == (t(15), ScheduleSource.HINT_ONESHOT)


def test_an_endpoint_hint_replaces_a_planner_hint_of_its_kind() -> None:
    planned = replace(
        endpoint(accept_hints=True), interval_hint=IntervalHint(45, t(600), "planner says")
    )

    ended = after_call(planned, NOW, answer(next_run_interval_seconds=20), NOW)

    assert ended.interval_hint is not None
    assert ended.interval_hint.source is HintSource.ENDPOINT


@pytest.mark.parametrize(
    ("clamps", "asked", "taken"),
    [
        ({"min_interval_seconds": 10}, 2, 10),
        ({"max_interval_seconds": 40}, 300, 40),
        ({"floor_seconds": 5}, 0.1, 5),
        ({"min_interval_seconds": 2, "floor_seconds": 5}, 3, 5),
    ],
)
def test_an_endpoint_hint_is_clamped_like_a_planner_hint(
    clamps: dict[str, float], asked: float, taken: float
) -> None:
    ended = after_call(
        endpoint(accept_hints=True, **clamps), NOW, answer(next_run_interval_seconds=asked), NOW
    )

    assert ended.interval_hint is not None
    assert ended.interval_hint.interval_seconds == taken
    assert (
        ended.interval_hint.reason
        == f"Cronpilot-Next-Run: every {asked:g}s (clamped to {taken:g}s)"
    )


def test_a_hint_from_an_endpoint_that_did_not_opt_in_is_ignored_and_said_so() -> None:
    asked = answer(next_run_interval_seconds=20)

    ended = after_call(endpoint(), NOW, asked, NOW)
    seen = heeded(endpoint().spec, asked.steering, NOW)

    assert ended.interval_hint is None
    assert ended.next_run_at == t(60)
    assert seen == Steering(
        ignored=(
            "Cronpilot-Next-Run ignored: the endpoint does not accept hints (accept_hints is off)",
        )
    )


@pytest.mark.parametrize(
    ("at", "why"),
    [
        (t(0), "is not in the future"),
        (t(-60), "is not in the future"),
        (NOW + ENDPOINT_HINT_TTL, "falls after the hint would expire"),
    ],
)
def test_a_time_hint_that_could_never_fire_is_ignored(at: datetime, why: str) -> None:
    seen = heeded(endpoint(accept_hints=True).spec, Steering(next_run_at=at), NOW)

    assert seen is not None
    assert seen.next_run_at is None
    [reason] = seen.ignored
    assert why in reason


def test_a_dependant_takes_no_hint() -> None:
    dependant = endpoint(accept_hints=True, schedule=Schedule(), depends_on=("up",))

    ended = steered(dependant, answer(next_run_interval_seconds=20), NOW)

    assert ended.interval_hint is None


def test_an_answer_without_steering_leaves_the_endpoint_as_it_was() -> None:
    plain = endpoint()

    assert steered(plain, answer(200), NOW) is plain


def by_hand(ended_at: datetime, response: Response, **state: Any) -> tuple[Endpoint, Endpoint]:
    """The endpoint (every 60 s, next call at t(60)) before and after a manual run asked for
    and answered at `ended_at`."""
    before = replanned(replace(endpoint(accept_hints=True), **state), NOW)
    run = manual_run(before, "cli:ann@web-1", ended_at)
    return before, after_finish(before, run, response, ended_at)


def test_a_manual_run_s_retry_after_holds_the_schedule_back() -> None:
    before, ended = by_hand(t(10), answer(429, retry_after_seconds=300))

    assert before.next_run_at == t(60)
    assert ended.retry_after_at == t(310)
    assert (ended.next_run_at, ended.next_run_source) == (t(310), ScheduleSource.RETRY_AFTER)
    # Still no slot of the schedule: no failure counted, the grid where it was.
    assert (ended.failure_count, ended.last_slot_at) == (0, NOW)


def test_a_manual_run_s_sooner_retry_after_leaves_the_next_call_where_it_was() -> None:
    _, ended = by_hand(t(10), answer(503, retry_after_seconds=5))

    assert ended.retry_after_at == t(15)
    assert (ended.next_run_at, ended.next_run_source) == (t(60), ScheduleSource.BASELINE)


@pytest.mark.parametrize(
    "response",
    [answer(200), answer(429, retry_after_seconds=30), Response(None)],
    ids=["no-retry-after", "sooner-retry-after", "no-answer"],
)
def test_a_manual_run_never_lifts_nor_shortens_a_hold(response: Response) -> None:
    before, ended = by_hand(t(10), response, retry_after_at=t(600))

    assert before.next_run_at == t(600)
    assert (ended.retry_after_at, ended.next_run_at) == (t(600), t(600))


def test_a_manual_run_s_next_run_hint_is_ignored_and_said_so() -> None:
    asked = answer(next_run_interval_seconds=20, next_run_at=t(30))

    _, ended = by_hand(t(10), asked)
    seen = heeded(endpoint(accept_hints=True).spec, asked.steering, t(10), requested=True)

    assert (ended.interval_hint, ended.oneshot_hint, ended.next_run_at) == (None, None, t(60))
    assert seen == Steering(
        ignored=(
            "Cronpilot-Next-Run ignored: a run asked for by hand (manual, backfill) does not "
            "set the schedule's pace",
        )
    )
