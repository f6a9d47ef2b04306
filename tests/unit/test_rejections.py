"""The admin's word stands (issue 21): which later proposals a rejection holds back, and until
when (`domain.planning.rejections`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cronpilot.domain.planning.planning import Proposal, ProposalDraft, ProposalKind, ProposalStatus
from cronpilot.domain.planning.rejections import same_change, standing_rejection

T0 = datetime(2030, 1, 7, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


def _rejected(
    kind: ProposalKind = ProposalKind.INTERVAL,
    *,
    interval: float | None = 4.0,
    at: datetime | None = None,
    decided: datetime = T0,
    status: ProposalStatus = ProposalStatus.REJECTED,
) -> Proposal:
    return Proposal(
        id="p1",
        endpoint_id="e",
        job_id="j",
        kind=kind,
        reason="steady",
        proposed_by="heuristic",
        created_at=T0,
        status=status,
        interval_seconds=interval if kind is ProposalKind.INTERVAL else None,
        at=at,
        ttl_seconds=3600,
        decided_by="ann",
        decided_at=decided,
        outcome="keep it at 2s",
    )


def _every(seconds: float, ttl: float = 3600) -> ProposalDraft:
    return ProposalDraft(ProposalKind.INTERVAL, "again", seconds, ttl_seconds=ttl)


@pytest.mark.parametrize(
    ("seconds", "same"),
    [(4.0, True), (4.4, True), (3.6, True), (4.41, False), (3.59, False), (8.0, False)],
)
def test_an_interval_within_ten_percent_is_the_same_change(seconds: float, same: bool) -> None:
    assert same_change(_every(seconds), _rejected(), T0) is same


def test_the_reason_and_the_ttl_do_not_make_another_change() -> None:
    assert same_change(_every(4.0, ttl=60), _rejected(), T0)
    assert not same_change(ProposalDraft(ProposalKind.PAUSE, "x", at=T0 + HOUR), _rejected(), T0)


@pytest.mark.parametrize(
    ("later", "at", "same"),
    [
        # Rejected at T0: a pause of an hour, until 13:00.
        (timedelta(minutes=30), T0 + HOUR, True),  # the same moment
        (timedelta(minutes=30), T0 + HOUR + timedelta(minutes=5), True),  # 6 min off at most
        (timedelta(minutes=30), T0 + timedelta(minutes=30) + HOUR, True),  # an hour from now
        (timedelta(minutes=30), T0 + timedelta(minutes=75), False),  # neither
        (timedelta(0), T0 + 3 * HOUR, False),
    ],
)
def test_a_timed_change_is_the_same_moment_or_the_same_time_ahead(
    later: timedelta, at: datetime, same: bool
) -> None:
    for kind in (ProposalKind.PAUSE, ProposalKind.NEXT_TIME):
        rejected = _rejected(kind, at=T0 + HOUR)
        draft = ProposalDraft(kind, "again", at=at, ttl_seconds=7200)
        assert same_change(draft, rejected, T0 + later) is same


def test_kinds_without_a_value_are_the_same_by_kind() -> None:
    resume = _rejected(ProposalKind.RESUME)
    assert same_change(ProposalDraft(ProposalKind.RESUME, "go"), resume, T0)
    assert not same_change(ProposalDraft(ProposalKind.BASELINE, "go"), resume, T0)


def test_a_rejection_stands_for_its_cool_down_from_when_it_was_decided() -> None:
    decided = T0 + timedelta(minutes=10)
    rejected = _rejected(decided=decided)

    within = standing_rejection(
        _every(4.2), [rejected], decided + HOUR - timedelta(seconds=1), HOUR
    )
    after = standing_rejection(_every(4.2), [rejected], decided + HOUR, HOUR)

    assert within is not None and within.until == decided + HOUR
    assert within.text() == (
        "the same change was rejected by ann at 2030-01-07T12:10:00+00:00 (keep it at 2s), "
        "proposal p1; it is held until 2030-01-07T13:10:00+00:00"
    )
    assert after is None
    assert standing_rejection(_every(4.2), [rejected], decided, timedelta(0)) is None


def test_only_rejections_hold_a_change_back_and_the_latest_names_the_end() -> None:
    older = _rejected(decided=T0)
    newer = _rejected(decided=T0 + timedelta(minutes=20))
    others = [_rejected(status=s) for s in ProposalStatus if s is not ProposalStatus.REJECTED]

    standing = standing_rejection(_every(4), [older, newer], T0 + timedelta(minutes=30), HOUR)

    assert standing is not None and standing.until == T0 + timedelta(minutes=80)
    assert standing_rejection(_every(4), others, T0, HOUR) is None
