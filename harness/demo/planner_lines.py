"""The planner's part of the demo summary, read back from the database: per endpoint, what the
planners (the built-in one, the rules) proposed, what became of it, and the last reason; and each
rule firing: when, its value, what it proposed and what became of that, or what held it back
(its `for:`, the dwell of the last rule-made change; the hourly limit refuses)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from cronpilot.adapters.views.formats import span
from cronpilot.adapters.views.planner import change_text
from cronpilot.domain.planning.planning import Proposal, ProposalStatus
from cronpilot.domain.ports import Store
from cronpilot.domain.rules.rule_firing import RULES_PLANNER, value_text
from cronpilot.domain.rules.rules import RuleEvaluation, RuleOutcome
from cronpilot.usecases.queries.catalog import endpoint_refs
from cronpilot.usecases.queries.planner import list_proposals, list_sessions

_ALL_PROPOSALS = 10_000
_ALL_SESSIONS = 10_000
_FIRED = (RuleOutcome.PROPOSED, RuleOutcome.REFUSED)
_HELD_BACK = {RuleOutcome.PENDING: "for", RuleOutcome.DWELLING: "dwell"}
"""What holds a rule that holds back, as the summary says it."""


@dataclass(frozen=True, slots=True)
class PlannerLine:
    ref: str
    statuses: Counter[str]
    last: Proposal

    def text(self) -> str:
        counts = ", ".join(f"{count} {status}" for status, count in sorted(self.statuses.items()))
        last = self.last
        return (
            f"planner {self.ref}: {sum(self.statuses.values())} proposals ({counts}); "
            f"last: {change_text(last)} {last.status.value}: {last.reason}"
        )


async def planner_lines(store: Store) -> list[PlannerLine]:
    refs = await endpoint_refs(store.reading)
    newest_first = await list_proposals(store.reading, limit=_ALL_PROPOSALS)
    lines: dict[str, PlannerLine] = {}
    for proposal in newest_first.items:
        ref = refs.get(proposal.endpoint_id, "?")
        line = lines.setdefault(ref, PlannerLine(ref, Counter(), proposal))
        line.statuses[proposal.status.value] += 1
    return [lines[ref] for ref in sorted(lines)]


@dataclass(frozen=True, slots=True)
class RuleLine:
    """One rule firing (its action proposed), the first pass of a rule held back, or one rule
    that could not be evaluated."""

    ref: str
    after_seconds: float
    """When, from the start of the demo."""
    evaluation: RuleEvaluation
    proposal: Proposal | None

    def text(self) -> str:
        e = self.evaluation
        head = f"rule {self.ref} {e.number} at +{span(self.after_seconds)}: {e.when}"
        if e.outcome is RuleOutcome.ERROR:
            return f"{head}: error: {e.detail}"
        held = _HELD_BACK.get(e.outcome)
        if held is not None:
            return f"{head} = {value_text(e.value)} -> held back by {held}: {e.detail}"
        return f"{head} = {value_text(e.value)} -> {self._proposed()}"

    def _proposed(self) -> str:
        p = self.proposal
        if p is None:
            return self.evaluation.detail
        became = p.status.value
        if p.status is ProposalStatus.REFUSED:
            became = f"refused: {p.outcome}"
        elif p.decided_by not in (None, "auto"):
            became = f"{became} by {p.decided_by}, after review"
        return f"{change_text(p)}: {became}"


async def rule_lines(store: Store, started: datetime) -> list[RuleLine]:
    """Every rule firing and rule error of the demo, oldest first, and where a rule was held
    back, the first of the passes in a row that held it back alike."""
    refs = await endpoint_refs(store.reading)
    newest_first = await list_sessions(store.reading, limit=_ALL_SESSIONS)
    proposals = {p.id: p for p in (await list_proposals(store.reading, limit=_ALL_PROPOSALS)).items}
    lines: list[RuleLine] = []
    previous: dict[str, tuple[int, RuleOutcome]] = {}
    for session in reversed(newest_first.items):
        if session.planner != RULES_PLANNER or not session.rule_evaluations:
            continue
        ref = refs.get(session.endpoint_id, "?")
        last = session.rule_evaluations[-1]
        again = previous.get(ref) == (last.number, last.outcome)
        previous[ref] = (last.number, last.outcome)
        lines.extend(
            RuleLine(
                ref,
                (session.started_at - started).total_seconds(),
                evaluation,
                proposals.get(evaluation.proposal_id or ""),
            )
            for evaluation in session.rule_evaluations
            if evaluation.outcome in (*_FIRED, RuleOutcome.ERROR)
            or (evaluation.outcome in _HELD_BACK and not again)
        )
    return lines
