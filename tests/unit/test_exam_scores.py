"""How a planner exam scores proposals (`harness.exams.scores`): direction against what the story
wanted (with the lag), stretches that need a direction, bounds, and flip-flops the story gave
no reason for."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from cronpilot.domain.planning.planning import (
    AnalysisSession,
    Proposal,
    ProposalKind,
    ProposalStatus,
    SessionStatus,
    ToolCallRecord,
)
from cronpilot.harness.exams.runner import proposals_in_order
from cronpilot.harness.exams.scores import (
    CALM,
    EITHER,
    RELAX,
    TIGHTEN,
    Direction,
    Proposed,
    Want,
    WantAt,
    directions,
    score,
    standings,
)
from tests.integration.planner.builders import T0

T, R, N = Direction.TIGHTEN, Direction.RELAX, Direction.NEUTRAL


def _made(
    *moves: tuple[int, Direction], within: bool = True, until: int | None = 60
) -> list[Proposed]:
    """Applied proposals whose change stands until `until` (None: a one-off)."""
    return [Proposed(second, way, within, ProposalStatus.APPLIED, until) for second, way in moves]


def _story(*stretches: tuple[int, Want]) -> WantAt:
    """A want per second from stretches of (first second, want)."""

    def want(second: int) -> Want:
        return [w for first, w in stretches if first <= second][-1]

    return want


def _proposal(
    kind: ProposalKind,
    interval: float | None = None,
    status: ProposalStatus = ProposalStatus.APPLIED,
    id: str = "p",
) -> Proposal:
    return Proposal(
        id=id,
        endpoint_id="e",
        job_id="j",
        kind=kind,
        reason="r",
        proposed_by="heuristic",
        created_at=T0,
        status=status,
        interval_seconds=interval,
        at=T0 + timedelta(minutes=1),
        ttl_seconds=30,
    )


@pytest.mark.parametrize(
    ("kind", "interval", "expected"),
    [
        (ProposalKind.INTERVAL, 5, T),
        (ProposalKind.INTERVAL, 60, R),
        (ProposalKind.INTERVAL, 10, N),
        (ProposalKind.RUN_NOW, None, T),
        (ProposalKind.NEXT_TIME, None, T),
        (ProposalKind.RESUME, None, T),
        (ProposalKind.PAUSE, None, R),
        (ProposalKind.BASELINE, None, N),
    ],
)
def test_a_first_proposal_is_read_against_the_baseline(
    kind: ProposalKind, interval: float | None, expected: Direction
) -> None:
    assert directions([_proposal(kind, interval)], baseline_seconds=10) == [expected]


def test_later_ones_against_the_interval_in_force_until_its_ttl_lapses() -> None:
    tighten = _proposal(ProposalKind.INTERVAL, 5)
    back = replace(_proposal(ProposalKind.INTERVAL, 10), created_at=T0 + timedelta(seconds=10))
    home = replace(_proposal(ProposalKind.BASELINE), created_at=T0 + timedelta(seconds=10))
    lapsed = replace(back, created_at=T0 + timedelta(seconds=30))
    refused = replace(tighten, status=ProposalStatus.REFUSED)
    assert directions([tighten, back], baseline_seconds=10) == [T, R]
    assert directions([tighten, home], baseline_seconds=10) == [T, R]
    assert directions([tighten, lapsed], baseline_seconds=10) == [T, N]
    assert directions([refused, back], baseline_seconds=10) == [T, N]


def test_nothing_proposed_where_nothing_was_needed_is_full_marks() -> None:
    result = score([], _story((0, EITHER)), seconds=60, lag=5)
    assert (result.proposals, result.needs, result.value) == (0, 0, 1.0)


def test_a_stretch_that_needs_a_direction_is_missed_by_a_planner_that_does_nothing() -> None:
    story = _story((0, EITHER), (20, TIGHTEN), (40, EITHER))
    result = score([], story, seconds=60, lag=5)
    assert (result.needs, result.met, result.direction) == (1, 0, 0.0)


def test_a_need_is_met_within_the_lag_or_by_a_stance_taken_before() -> None:
    story = _story((0, EITHER), (20, TIGHTEN), (40, EITHER))
    late_enough = score(_made((44, T)), story, seconds=60, lag=5)
    too_late = score(_made((46, T)), story, seconds=60, lag=5)
    before = score(_made((3, T)), story, seconds=60, lag=5)
    assert (late_enough.met, too_late.met, before.met) == (1, 0, 1)


def test_a_blip_shorter_than_the_minimum_stretch_needs_nothing() -> None:
    story = _story((0, EITHER), (20, TIGHTEN), (22, EITHER))
    assert score([], story, seconds=60, lag=5).needs == 0


def test_a_direction_the_story_forbade_is_wrong_unless_it_was_allowed_within_the_lag() -> None:
    story = _story((0, TIGHTEN), (30, CALM))
    result = score(_made((10, R), (33, T), (50, T)), story, seconds=60, lag=5)
    # 10 s: relax while tightening was wanted; 33 s: the tightening wanted until 29 s, seen
    # late; 50 s: tightening long after the story turned calm.
    assert (result.proposals, result.right) == (3, 1)


def test_out_of_bounds_proposals_cost_the_clamps_share() -> None:
    made = _made((10, T)) + _made((20, T), within=False)
    result = score(made, _story((0, EITHER)), seconds=60, lag=5)
    assert (result.clamps, result.value) == (0.5, 0.5)


def test_a_reversal_the_story_gave_no_reason_for_is_a_flip_flop() -> None:
    made = _made((10, T), (20, R), (30, T), (40, N))
    result = score(made, _story((0, EITHER)), seconds=60, lag=5)
    assert result.oscillations == 2
    assert result.value == pytest.approx(1 / 3)


def test_relaxing_once_a_direction_is_no_longer_needed_follows_the_story() -> None:
    story = _story((0, TIGHTEN), (10, EITHER), (20, TIGHTEN))
    made = _made((2, T), (12, R), (22, T))
    assert score(made, story, seconds=30, lag=0).oscillations == 0
    constant = score(made, _story((0, EITHER)), seconds=30, lag=0)
    assert constant.oscillations == 2
    # Turning away from a move the story did not allow corrects it: only leaving an allowed
    # one flips (T at 2 s, then R at 12 s: a flip; R, then T at 22 s: a correction).
    corrected = score(made, _story((0, TIGHTEN)), seconds=30, lag=0)
    assert corrected.oscillations == 1
    late = score(_made((16, T), (20, R)), _story((0, TIGHTEN), (16, CALM)), seconds=30, lag=5)
    assert (late.oscillations, late.right) == (0, 2)


def test_a_reversal_that_follows_the_story_is_no_flip_flop() -> None:
    story = _story((0, TIGHTEN), (20, EITHER), (25, RELAX), (40, TIGHTEN))
    made = _made((5, T), (28, R), (42, T))
    result = score(made, story, seconds=60, lag=5)
    assert (result.oscillations, result.needs, result.met, result.value) == (0, 3, 3, 1.0)


def test_a_change_stands_until_it_lapses_or_is_replaced_and_a_one_off_for_none() -> None:
    def at(second: int, proposal: Proposal) -> Proposal:
        return replace(proposal, created_at=T0 + timedelta(seconds=second))

    interval = _proposal(ProposalKind.INTERVAL, 5)
    assert standings([interval], T0) == [29]
    assert standings([_proposal(ProposalKind.PAUSE)], T0) == [59]
    replaced = [interval, at(10, _proposal(ProposalKind.INTERVAL, 60))]
    assert standings(replaced, T0) == [9, 39]
    back = [interval, at(12, _proposal(ProposalKind.BASELINE))]
    assert standings(back, T0) == [11, None]
    refused_later = [interval, at(10, _proposal(ProposalKind.INTERVAL, 60, ProposalStatus.REFUSED))]
    assert standings(refused_later, T0) == [29, None]
    one_offs = [_proposal(k) for k in (ProposalKind.RUN_NOW, ProposalKind.RESUME)]
    assert standings(one_offs, T0) == [None, None]


def test_renewing_the_change_in_force_is_not_judged() -> None:
    story = _story((0, TIGHTEN))
    renewed = score(_made((2, T), (20, N)), story, seconds=40, lag=0)
    assert (renewed.judged, renewed.right, renewed.direction) == (1, 1, 1.0)


def test_a_one_off_or_a_lapsed_change_is_no_stance_for_a_later_need() -> None:
    story = _story((0, EITHER), (20, TIGHTEN), (40, EITHER))
    run_now = score(_made((3, T), until=None), story, seconds=60, lag=5)
    lapsed = score(_made((3, T), until=15), story, seconds=60, lag=5)
    standing = score(_made((3, T), until=25), story, seconds=60, lag=5)
    assert (run_now.met, lapsed.met, standing.met) == (0, 0, 1)


def test_proposals_that_change_nothing_earn_nothing_and_meet_no_need() -> None:
    calm = _story((0, CALM))
    idle = score(_made(*((s, N) for s in range(0, 20, 2))), calm, seconds=60, lag=0)
    assert (idle.proposals, idle.judged, idle.direction) == (10, 0, 1.0)
    story = _story((0, CALM), (20, TIGHTEN), (40, CALM))
    missed = score(_made((25, N)), story, seconds=60, lag=0)
    assert (missed.judged, missed.needs, missed.met, missed.direction) == (0, 1, 0, 0)


def test_proposals_of_one_round_are_ordered_as_the_tool_calls_made_them() -> None:
    """The exam's clock stands still during a round: the ids, not the times, would order
    them, and ids are random."""
    first = _proposal(ProposalKind.INTERVAL, 60, id="ffff")
    second = _proposal(ProposalKind.INTERVAL, 5, id="0000")
    calls = [
        ToolCallRecord(seq, "propose_interval", {}, 1.0, 10, outcome=f"applied (proposal {p.id})")
        for seq, p in ((1, first), (2, second))
    ]
    session = AnalysisSession(
        "s", "e", "j", "llm:x", T0, T0, SessionStatus.SUBMITTED, tool_calls=calls
    )
    assert proposals_in_order([second, first], [session]) == [first, second]


def test_a_story_of_no_seconds_judges_every_move_wrong_and_counts_no_flip() -> None:
    result = score(_made((1, T), (2, R)), _story((0, EITHER)), seconds=0, lag=0)
    assert (result.judged, result.right, result.oscillations) == (2, 0, 0)
