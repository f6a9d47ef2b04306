"""Damped rules end to end (issue 21, decision 0032): a processor whose rules follow a queue
whose depth swings every 40 s, for ten simulated minutes with the scheduler and planner loops,
the default dwell and the default hourly limit, on SQLite (`tests.support.rule_stories`)."""

from __future__ import annotations

from itertools import pairwise

import pytest

from cronpilot.domain.planning.planning import ProposalStatus
from cronpilot.domain.rules.rules import RuleOutcome
from cronpilot.harness.simulator.troubles import SWING_SECONDS
from tests.support.rule_stories import QUEUE, START, RuleStory, tell
from tests.support.settings import limits_for_tests, settings_for_tests

TEN_MINUTES = 600
SWINGING = RuleStory(
    "swinging",
    # The queue story's processor, reading a depth that swings (`/troubles/swinging`).
    QUEUE.jobs.replace(
        '{name: depth, url: "${SIMULATOR_URL}/queue/depth", interval: 5s, planner_mode: "off"}',
        '{name: depth, url: "${SIMULATOR_URL}/troubles/swinging", interval: 5s, '
        'planner_mode: "off"}',
    ),
    seconds=TEN_MINUTES,
)


# Ten simulated minutes take about a minute alone; on a loaded machine more than the default.
@pytest.mark.timeout(300)
async def test_a_rule_following_a_swinging_queue_changes_at_most_once_per_dwell(
    sqlite_url: str,
) -> None:
    store = await tell(SWINGING, sqlite_url, limits=limits_for_tests(), dwell_seconds=None)
    try:
        processor = await store.catalog.get_endpoint("queue/processor")
        proposals = list(reversed(await store.planner.list_proposals(endpoint_id=processor.id)))
        sessions = await store.planner.list_sessions(processor.id, limit=10_000)
    finally:
        await store.close()

    applied = [p for p in proposals if p.status is ProposalStatus.APPLIED]
    print(f"\nqueue/processor, depth swinging every {SWING_SECONDS}s, 10 simulated minutes:")
    for p in applied:
        assert p.decided_at is not None
        print(f"  +{(p.decided_at - START).total_seconds():5.0f}s {p.kind.value} {p.reason}")
    dwell = settings_for_tests().rules_dwell_seconds
    moments = [p.decided_at for p in applied if p.decided_at is not None]
    gaps = [(b - a).total_seconds() for a, b in pairwise(moments)]
    assert all(gap >= dwell for gap in gaps), gaps
    # Still following the queue: a change as soon as each dwell allows (15 swings undamped).
    assert 4 <= len(applied) <= TEN_MINUTES // dwell + 1, gaps
    # Held back while the last change dwells (those passes are quiet:
    # `domain.schedule.quiet_passes`), never refused: the hourly limit is not reached.
    outcomes = [e.outcome for s in sessions for e in s.rule_evaluations]
    assert RuleOutcome.REFUSED not in outcomes
    assert {p.status for p in proposals} == {ProposalStatus.APPLIED}
