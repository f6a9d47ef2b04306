"""The figures of the left-alone trial (`bench/left_alone.py`), on proposals made by hand: what
counts as a rejected change made again, and how changes and sessions are counted in a span."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bench.left_alone import PendingWatch, most_within, repeated_rejections, same_change
from cronpilot.domain.planning.planning import Proposal, ProposalKind, ProposalStatus

T0 = datetime(2030, 1, 1, tzinfo=UTC)
REFS = {"e1": "job/a", "e2": "job/b"}


def _proposal(
    number: int,
    seconds: float,
    status: ProposalStatus,
    *,
    interval: float | None = 4.0,
    kind: ProposalKind = ProposalKind.INTERVAL,
    endpoint: str = "e1",
    decided: float | None = None,
) -> Proposal:
    return Proposal(
        id=f"p{number}",
        endpoint_id=endpoint,
        job_id="j",
        kind=kind,
        reason="r",
        proposed_by="heuristic",
        created_at=T0 + timedelta(seconds=seconds),
        status=status,
        interval_seconds=interval,
        decided_at=None if decided is None else T0 + timedelta(seconds=decided),
    )


def test_the_same_change_is_the_same_endpoint_kind_and_value_within_ten_percent() -> None:
    rejected = _proposal(1, 0, ProposalStatus.REJECTED)
    assert same_change(rejected, _proposal(2, 5, ProposalStatus.APPLIED, interval=4.4))
    assert not same_change(rejected, _proposal(3, 5, ProposalStatus.APPLIED, interval=4.5))
    assert not same_change(rejected, _proposal(4, 5, ProposalStatus.APPLIED, endpoint="e2"))
    resume = _proposal(5, 0, ProposalStatus.REJECTED, kind=ProposalKind.RESUME, interval=None)
    assert same_change(resume, _proposal(6, 9, ProposalStatus.PENDING, kind=ProposalKind.RESUME))


def test_a_rejected_change_made_again_within_the_hour_is_counted_once() -> None:
    proposals = [
        _proposal(1, 0, ProposalStatus.REJECTED, decided=10),
        _proposal(2, 62, ProposalStatus.APPLIED, interval=3.9),
        _proposal(3, 70, ProposalStatus.REFUSED),
        _proposal(4, 80, ProposalStatus.APPLIED, interval=1.0),
        _proposal(5, 3700, ProposalStatus.APPLIED),
    ]

    found = repeated_rejections(proposals, REFS, T0)

    assert found == [
        "job/a: interval 3.9 by heuristic at 62 s (applied), 52 s after interval 4.0 was rejected"
    ]


def test_the_most_within_a_span_counts_a_sliding_window() -> None:
    times = [T0 + timedelta(seconds=s) for s in (0, 30, 119, 120, 240)]
    assert most_within(times, timedelta(minutes=2)) == 3
    assert most_within(times[3:], timedelta(minutes=2)) == 1
    assert most_within([], timedelta(minutes=2)) == 0


def test_the_pending_watch_keeps_the_highest_count_and_when() -> None:
    watch = PendingWatch()
    watch.look(["job/a"], "1 s")
    watch.look(["job/a", "job/a", "job/b"], "2 s")
    watch.look(["job/a"], "3 s")
    assert watch.highest == (2, "job/a at 2 s")
