"""One controller per endpoint over a swinging queue (decision 0048): a processor whose rules
follow a queue that fills and drains every 20 s, with the built-in freshness planner on the same
endpoint, for ten simulated minutes with the scheduler and planner loops, the default dwell and
the default hourly limit, on SQLite (`tests.support.rule_stories`). The rules change the
endpoint at most once per dwell, and what the planner would have done meanwhile is held, not
made."""

from __future__ import annotations

from itertools import pairwise

import pytest

from cronpilot.adapters.views.planner import session_view
from cronpilot.domain.planning.planning import ProposalStatus
from cronpilot.harness.stories import START
from cronpilot.planner.freshness import FRESHNESS, FreshnessAnalyst
from tests.support.rule_stories import QUEUE, RuleStory, tell
from tests.support.settings import limits_for_tests, settings_for_tests

TEN_MINUTES = 600
SWINGING = RuleStory(
    "queue",
    QUEUE.jobs.replace("min_interval: 3s", "min_interval: 2s")
    .replace("{interval: 3s, ttl: 10m}", "{interval: 2s, ttl: 10m}")
    .replace("          - {when: 'true', then: baseline}\n", ""),
    seconds=TEN_MINUTES,
)
HELD = "not made: held by rule "


# Ten simulated minutes take about a minute alone; on a loaded machine more than the default.
@pytest.mark.timeout(300)
async def test_rules_and_the_freshness_planner_change_a_swinging_queue_once_per_dwell(
    sqlite_url: str,
) -> None:
    assert SWINGING.jobs.count("ttl: 10m") == 2 and "baseline" not in SWINGING.jobs
    store = await tell(
        SWINGING,
        sqlite_url,
        limits=limits_for_tests(),
        dwell_seconds=None,
        analyst=FreshnessAnalyst(),
    )
    try:
        processor = await store.catalog.get_endpoint("queue/processor")
        proposals = list(reversed(await store.planner.list_proposals(endpoint_id=processor.id)))
        sessions = await store.planner.list_sessions(processor.id, limit=10_000)
    finally:
        await store.close()

    applied = [p for p in proposals if p.status is ProposalStatus.APPLIED]
    moments = [p.decided_at for p in applied if p.decided_at is not None]
    print("\nqueue/processor, rules and the freshness planner, 10 simulated minutes:")
    for p, at in zip(applied, moments, strict=True):
        print(f"  +{(at - START).total_seconds():5.0f}s {p.proposed_by}: {p.reason}")
    dwell = settings_for_tests().rules_dwell_seconds
    gaps = [(b - a).total_seconds() for a, b in pairwise(moments)]
    assert applied and all(gap >= dwell for gap in gaps), gaps
    assert len(applied) <= TEN_MINUTES // dwell + 1, gaps
    # The planner looked while no rule held, and each change it would have made was held by
    # the rule whose hint was in force, recorded in its own session.
    mine = [s for s in sessions if s.planner == FRESHNESS]
    held = [
        call.outcome
        for s in mine
        for call in s.tool_calls
        if call.outcome is not None and call.outcome.startswith(HELD)
    ]
    print(f"  {len(mine)} planner sessions, {len(held)} changes held: {held[:1]}")
    assert held and all("of queue/processor until " in outcome for outcome in held)
    assert all(p.proposed_by != FRESHNESS for p in applied)
    # `sessions show` and the API show each held change in its tool call's outcome.
    shown = [session_view(s, "queue/processor") for s in mine]
    assert any(
        (call["outcome"] or "").startswith(HELD) for view in shown for call in view["tool_calls"]
    )
