"""Quiet passes: a planner pass that proposes nothing and finds nothing new leaves
no stored session. It is counted (`Telemetry.passed_quietly`) and moves the endpoint's last
look (`PlannerState.last_analysed_at`), so a planner looking at a steady endpoint every minute
does not write ~1,400 sessions a day that all say "already in force".

A session whose outcome matters is stored: a proposal made (applied, held, dropped or refused
by a guardrail), an action a higher controller held back (`domain.planning.controllers`), a failed
or exhausted analysis, a tool or condition error, a rule that began or stopped holding.
`planner run-once` stores every session: someone asked to see it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from cronpilot.domain.planning.planning import AnalysisSession, SessionStatus
from cronpilot.domain.rules.rules import RuleEvaluation, RuleOutcome, Streak

NOTHING_NEW = frozenset({RuleOutcome.NOT_HELD, RuleOutcome.IN_FORCE})
"""Rule outcomes that change nothing. Any other (one added later included) is kept."""
ACTED = frozenset({RuleOutcome.PROPOSED, RuleOutcome.REFUSED})
"""Rule outcomes that made a proposal: always stored (dwell and the hourly limit space them)."""
NEWS_SPACING = timedelta(minutes=5)
"""A rules pass that made no proposal, and whose news is only which rule holds, waits or fails
to evaluate, is stored at most this often per endpoint: a queue whose depth swings every few
seconds would otherwise store a session on every pass (the proposals, the rule evaluation
metric and the endpoint's last look say the rest)."""
HELD_BACK = frozenset({RuleOutcome.PENDING, RuleOutcome.DWELLING, RuleOutcome.REJECTED})
"""A rule that holds but waits (its `for:`, a dwell, an admin's rejection): news on the first
pass of its streak only; the passes after it, while the same rule goes on holding, say again
what the first said."""


def analysis_is_quiet(session: AnalysisSession, proposals_made: int) -> bool:
    """Whether an analyst's (built-in, LLM) session is left unstored: it ended with
    `submit_analysis`, without an error, and proposed nothing (`proposals_made`: the
    proposals its action tools recorded and the actions a higher controller held back; an
    action found already in force or pending makes none)."""
    return (
        session.status is SessionStatus.SUBMITTED
        and session.error is None
        and session.tool_errors == 0
        and proposals_made == 0
    )


def rules_pass_is_quiet(
    evaluations: Sequence[RuleEvaluation],
    held: int | None,
    held_before: int | None,
    streak: Streak | None = None,
    streak_before: Streak | None = None,
) -> bool:
    """Whether a rules pass is left unstored: no rule proposed, was refused or failed to
    evaluate, the rule whose action stands (`RulesPass.held`) is the one that stood after the
    pass before (`held_before`), and a rule held back is held back on a streak that the pass
    before already saw (`streak` equal to `streak_before`)."""
    continuing = streak is not None and streak == streak_before
    return held == held_before and all(
        e.outcome in NOTHING_NEW or (continuing and e.outcome in HELD_BACK) for e in evaluations
    )


def rules_news_is_due(
    evaluations: Sequence[RuleEvaluation], last_stored: datetime | None, now: datetime
) -> bool:
    """Whether a rules pass that is not quiet is stored: when it made a proposal, or when the
    endpoint's newest stored session (`last_stored`, of any planner) is `NEWS_SPACING` old."""
    acted = any(e.outcome in ACTED for e in evaluations)
    return acted or last_stored is None or now - last_stored >= NEWS_SPACING
