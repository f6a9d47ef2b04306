"""The example jobs (`adapters/examples/jobs.yaml`) for ten simulated minutes with the
heuristic planner, the rules and the default guardrail limits, on the endpoint simulator and
a fake clock (issue 13): the planner's changes and refusals per endpoint are counted, and
neither the hourly limit nor an alternation of an analyst's intervals is what happens. The
rules follow their conditions, which the simulator flips often: their dwell damps them, and
they count in the hourly limit (issue 21, decision 0032), which the standbys, whose resumes are
urgent, can meet: a rule it refuses tries again once its dwell is over.

Told twice, as shipped (`test_example_ten_minutes.py`) and with the rules taken out, so that
the heuristic tunes the endpoints the rules would (`test_example_ten_minutes_heuristic.py`):
a file each, so that two workers share the two stories (about a minute of CPU together).
"""

from __future__ import annotations

from collections import Counter
from itertools import pairwise
from pathlib import Path

from cronpilot.adapters.sql import SqlStore
from cronpilot.domain.planning.planning import Proposal, ProposalKind, ProposalStatus
from cronpilot.domain.rules.rule_firing import rule_made
from cronpilot.harness.exams.catalog import without_rules
from tests.support.rule_stories import RuleStory, tell
from tests.support.settings import limits_for_tests, settings_for_tests

EXAMPLE = Path(__file__).parents[2] / "adapters" / "examples" / "jobs.yaml"
TEN_MINUTES = 600


def _alternates(proposals: list[Proposal]) -> bool:
    """Whether three interval changes in a row (oldest first) went tighten/relax/tighten or
    relax/tighten/relax."""
    values = [p.interval_seconds for p in proposals if p.interval_seconds is not None]
    steps = [b - a for a, b in pairwise(values)]
    return any(
        (a > 0) != (b > 0) and (b > 0) != (c > 0)
        for a, b, c in zip(steps, steps[1:], steps[2:], strict=False)
    )


async def ten_minutes_of_the_examples(sqlite_url: str, *, rules: bool) -> None:
    """Tell the examples for ten simulated minutes (`rules`: as shipped; otherwise without
    their rules) and assert what the module says."""
    text = EXAMPLE.read_text(encoding="utf-8")
    story = RuleStory("examples", text if rules else without_rules(text), seconds=TEN_MINUTES)
    store: SqlStore = await tell(story, sqlite_url, limits=limits_for_tests(), dwell_seconds=None)
    try:
        proposals = list(reversed(await store.planner.list_proposals(limit=10_000)))
        refs = {e.id: e.ref for e in await store.catalog.list_endpoints()}
    finally:
        await store.close()

    counted: Counter[tuple[str, str, str]] = Counter(
        (refs[p.endpoint_id], p.proposed_by, p.status.value) for p in proposals
    )
    print("\nproposals per endpoint, proposer and status in 10 simulated minutes:")
    for (ref, by, status), count in sorted(counted.items()):
        print(f"  {ref:28} {by:12} {status:9} {count}")
    limited = [
        p
        for p in proposals
        if p.status is ProposalStatus.REFUSED and "in the last hour" in (p.outcome or "")
    ]
    assert not [p for p in limited if not rule_made(p.proposed_by)]
    dwell = settings_for_tests().rules_dwell_seconds
    for ref in set(refs.values()):
        made = [
            p.decided_at
            for p in proposals
            if refs[p.endpoint_id] == ref
            and p.proposed_by == "rules"
            and p.status in (ProposalStatus.APPLIED, ProposalStatus.REFUSED)
        ]
        # Once per dwell at most, whatever the rules' data does (urgent resumes aside).
        assert all(
            a is not None and b is not None and (b - a).total_seconds() >= dwell
            for a, b in pairwise(made)
        ), ref
        intervals = [
            p
            for p in proposals
            if refs[p.endpoint_id] == ref
            and p.kind is ProposalKind.INTERVAL
            and p.status is ProposalStatus.APPLIED
            and not rule_made(p.proposed_by)
        ]
        assert not _alternates(intervals), ref
    assert proposals, "the planner made no proposal at all"
