"""Quiet passes (issue 21): a planner pass that proposes nothing and finds nothing new leaves
no stored session. It is counted (`Telemetry.passed_quietly`) and moves the endpoint's last
look (`PlannerState.last_analysed_at`), so a planner looking at a steady endpoint every minute
does not write ~1,400 sessions a day that all say "already in force".

A session whose outcome matters is stored: a proposal made (applied, held, dropped or refused
by a guardrail), a failed or exhausted analysis, a tool or condition error, a rule that began
or stopped holding. `planner run-once` stores every session: someone asked to see it.
"""

from __future__ import annotations

from collections.abc import Sequence

from cronpilot.domain.planning import AnalysisSession, SessionStatus
from cronpilot.domain.rules import RuleEvaluation, RuleOutcome

NOTHING_NEW = frozenset({RuleOutcome.NOT_HELD, RuleOutcome.IN_FORCE})
"""Rule outcomes that change nothing. Any other (one added later included) is kept."""


def analysis_is_quiet(session: AnalysisSession, proposals_made: int) -> bool:
    """Whether an analyst's (heuristic, LLM) session is left unstored: it ended with
    `submit_analysis`, without an error, and proposed nothing (`proposals_made`: the
    proposals its action tools recorded; an action found already in force or pending makes
    none)."""
    return (
        session.status is SessionStatus.SUBMITTED
        and session.error is None
        and session.tool_errors == 0
        and proposals_made == 0
    )


def rules_pass_is_quiet(
    evaluations: Sequence[RuleEvaluation], held: int | None, held_before: int | None
) -> bool:
    """Whether a rules pass is left unstored: no rule proposed, was refused or failed to
    evaluate, and the rule whose action stands (`RulesPass.held`) is the one that stood
    after the pass before (`held_before`)."""
    return held == held_before and all(e.outcome in NOTHING_NEW for e in evaluations)
