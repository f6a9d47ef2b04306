"""Guardrails and the heuristic rules: pure functions of the endpoint, its runs and `now`."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from cronpilot.domain.model import Endpoint, EndpointSpec, IntervalHint, Pause, Schedule
from cronpilot.domain.planning.churn import in_force
from cronpilot.domain.planning.freshness_planner import MAX_LOOK_AGAIN_SECONDS
from cronpilot.domain.planning.guardrails import change_for, refusal
from cronpilot.domain.planning.heuristic import Observation, judge
from cronpilot.domain.planning.planning import ProposalDraft, ProposalKind
from tests.support.settings import limits_for_tests

NOW = datetime(2030, 1, 1, tzinfo=UTC)
LIMITS = limits_for_tests(max_pause_seconds=3600, max_changes_per_hour=2, max_hint_ttl_seconds=600)


def _endpoint(**spec: object) -> Endpoint:
    base = EndpointSpec(
        "e",
        "https://example.com",
        Schedule(interval_seconds=20),
        min_interval_seconds=5,
        max_interval_seconds=80,
    )
    return Endpoint("id", "job", "j", replace(base, **spec))  # type: ignore[arg-type]


def _in(seconds: float) -> datetime:
    return NOW + timedelta(seconds=seconds)


@pytest.mark.parametrize(
    ("draft", "changes", "expected"),
    [
        (ProposalDraft(ProposalKind.INTERVAL, "r", 10, ttl_seconds=60), 0, None),
        (ProposalDraft(ProposalKind.INTERVAL, " ", 10, ttl_seconds=60), 0, ("reason", "required")),
        (ProposalDraft(ProposalKind.INTERVAL, "r", 10, ttl_seconds=60), 2, ("rate", "limit is 2")),
        (
            ProposalDraft(ProposalKind.INTERVAL, "r", 4, ttl_seconds=60),
            0,
            ("interval", "minimum 5"),
        ),
        (ProposalDraft(ProposalKind.INTERVAL, "r", 81, ttl_seconds=60), 0, ("interval", "max")),
        (ProposalDraft(ProposalKind.INTERVAL, "r", 10, ttl_seconds=601), 0, ("ttl", "exceeds")),
        (ProposalDraft(ProposalKind.NEXT_TIME, "r", at=_in(30), ttl_seconds=60), 0, None),
        (ProposalDraft(ProposalKind.NEXT_TIME, "r", at=NOW, ttl_seconds=60), 0, ("next_time", "")),
        (
            ProposalDraft(ProposalKind.NEXT_TIME, "r", at=_in(90), ttl_seconds=60),
            0,
            ("next_time", "lengthen"),
        ),
        (ProposalDraft(ProposalKind.PAUSE, "r", at=_in(3600)), 0, None),
        (ProposalDraft(ProposalKind.PAUSE, "r", at=_in(3601)), 0, ("pause", "at most 3600s")),
        (ProposalDraft(ProposalKind.RESUME, "r"), 0, ("not_paused", "not paused")),
    ],
)
def test_refusals(draft: ProposalDraft, changes: int, expected: tuple[str, str] | None) -> None:
    why = refusal(draft, _endpoint(), changes, NOW, LIMITS)

    if expected is None:
        assert why is None
    else:
        assert why is not None
        rule, words = expected
        assert why.rule == rule
        assert words in why.text


def test_applying_keeps_what_the_proposal_does_not_touch() -> None:
    hint = IntervalHint(40, _in(100), "old")
    paused = replace(_endpoint(), interval_hint=hint, pause=Pause("ops", _in(50)))

    shot = change_for(
        ProposalDraft(ProposalKind.NEXT_TIME, "why", at=_in(9), ttl_seconds=60),
        paused,
        NOW,
        by="rules",
    )
    resumed = change_for(ProposalDraft(ProposalKind.RESUME, "go"), paused, NOW, by="rules")

    assert (shot.interval_hint, shot.pause) == (hint, paused.pause)
    assert shot.oneshot_hint is not None
    assert (shot.oneshot_hint.at, shot.oneshot_hint.expires_at) == (_in(9), _in(60))
    assert (resumed.interval_hint, resumed.pause) == (hint, None)


def test_an_applied_pause_is_by_its_proposer() -> None:
    draft = ProposalDraft(ProposalKind.PAUSE, "quiet", at=_in(60))

    change = change_for(draft, _endpoint(), NOW, by="planner:heuristic")

    assert change.pause == Pause("quiet", _in(60), "planner:heuristic")


SAME = Observation(ok=True, body_hash="a")


@pytest.mark.parametrize(
    ("runs", "interval", "reason"),
    [
        ([SAME, SAME, SAME], 40.0, "identical; relaxing from every 20s to every 40s (max 80s)"),
        ([SAME, Observation(True, "b")], 10.0, "tightening from every 20s to every 10s (min 5s)"),
        ([Observation(False, "x"), SAME], None, "failing: left to the backoff"),
        ([SAME], None, "fewer than two finished runs"),
        ([SAME, SAME], None, "settling"),
    ],
)
def test_heuristic_rules(runs: list[Observation], interval: float | None, reason: str) -> None:
    verdict = judge(_endpoint(), runs, NOW)

    assert verdict.interval_seconds == interval
    assert reason in verdict.reasoning
    if interval is not None:
        assert verdict.ttl_seconds == max(interval * 10, 3600)


def test_heuristic_stays_within_the_clamps_and_needs_them_to_move() -> None:
    at_max = replace(_endpoint(), interval_hint=IntervalHint(80, _in(100), "relaxed"))
    unclamped = _endpoint(min_interval_seconds=None, max_interval_seconds=None)

    assert judge(at_max, [SAME, SAME, SAME], NOW).interval_seconds is None
    assert "already at the max 80s" in judge(at_max, [SAME, SAME, SAME], NOW).reasoning
    assert judge(unclamped, [SAME, SAME, SAME], NOW).interval_seconds is None
    assert judge(unclamped, [SAME, Observation(True, "b")], NOW).interval_seconds is None


def test_a_dag_dependant_has_no_schedule_to_move() -> None:
    dependant = _endpoint(schedule=Schedule(), depends_on=("fetch",))
    move = ProposalDraft(ProposalKind.INTERVAL, "r", 10, ttl_seconds=60)
    shot = ProposalDraft(ProposalKind.NEXT_TIME, "r", at=_in(30), ttl_seconds=60)
    pause = ProposalDraft(ProposalKind.PAUSE, "r", at=_in(600))

    verdict = judge(dependant, [SAME, Observation(True, "b")], NOW)

    assert (verdict.interval_seconds, verdict.look_again_seconds) == (None, 3600)
    assert "runs after its upstreams" in verdict.reasoning
    for draft in (move, shot):
        why = refusal(draft, dependant, 0, NOW, LIMITS)
        assert why is not None
        assert why.rule == "after_upstreams"
        assert "runs after its upstreams" in why.text
    assert refusal(pause, dependant, 0, NOW, LIMITS) is None


def test_the_heuristic_looks_again_within_a_day_however_long_the_period() -> None:
    """Three periods of a daily cron are three days, more than `submit_analysis` allows: the
    heuristic's session would fail on its own submit."""
    daily = _endpoint(schedule=Schedule(cron="0 3 * * *"), min_interval_seconds=None)

    verdict = judge(daily, [SAME], NOW)

    assert verdict.look_again_seconds == MAX_LOOK_AGAIN_SECONDS


@pytest.mark.parametrize(
    ("hashes", "confidence"),
    [
        ("aaa", 0.9),
        ("aaaa", 0.95),
        ("ab", 0.7),
        ("abc", 0.8),
        ("abcd", 0.9),
    ],
)
def test_the_heuristics_confidence_grows_with_its_evidence(hashes: str, confidence: float) -> None:
    verdict = judge(_endpoint(), [Observation(True, h) for h in hashes], NOW)
    assert verdict.interval_seconds is not None
    assert verdict.confidence == confidence


def test_what_is_in_force() -> None:
    until = NOW + timedelta(minutes=5)
    hinted = replace(
        _endpoint(), interval_hint=IntervalHint(30, until, "x"), pause=Pause("quiet", until)
    )
    every = ProposalDraft(ProposalKind.INTERVAL, "r", 30, ttl_seconds=60)

    assert in_force(every, hinted, NOW)
    assert not in_force(every, hinted, until)
    assert not in_force(replace(every, interval_seconds=31), hinted, NOW)
    assert in_force(ProposalDraft(ProposalKind.PAUSE, "r", at=until), hinted, NOW)
    assert in_force(ProposalDraft(ProposalKind.BASELINE, "r"), _endpoint(), NOW)
    assert not in_force(ProposalDraft(ProposalKind.RUN_NOW, "r", ttl_seconds=60), hinted, NOW)
