"""The rules planner (decision 0026): an endpoint's response rules evaluated, in order, on the
latest responses of its job; the first that holds proposes its action through the proposal desk,
unless that action already stands or the rule is held back: by its `for:`, or by the dwell of
the last rule-made change (`domain.rules.rule_damping`). Each pass is recorded as a session of its
own (planner `rules`) with every evaluation: its value, and the proposal made or why none was.

A condition that cannot be evaluated (a field missing from the latest response, a wrong type)
is recorded, counted (`Telemetry.rule_evaluated`) and taken as not holding: the next rule is
tried, and the planner goes on."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from cronpilot.domain.model import Endpoint, Run, RunStatus, new_id
from cronpilot.domain.planning.planning import (
    AnalysisClaim,
    AnalysisSession,
    Proposal,
    ProposalStatus,
    RulesPass,
    SessionStatus,
    proposal_outcome,
)
from cronpilot.domain.ports.telemetry import Telemetry
from cronpilot.domain.ports.units import ReadingFactory
from cronpilot.domain.rules.conditions import (
    Condition,
    ConditionError,
    Response,
    Verdict,
    condition,
)
from cronpilot.domain.rules.rule_damping import held_back, last_rule_move, streak_after
from cronpilot.domain.rules.rule_firing import (
    RULES_PLANNER,
    URGENT_RULES,
    FiringRule,
    already_standing,
    rule_draft,
)
from cronpilot.domain.rules.rules import RuleEvaluation, RuleOutcome, Streak
from cronpilot.usecases.proposals import RECENT, ProposalDesk, Proposer

OWN_VARIABLES = frozenset({"body", "status", "duration_ms", "headers"})
_LOOKBACK = 5
"""Runs read back past a newest one that has no response yet (running, skipped)."""
_STANDS = (RuleOutcome.PROPOSED, RuleOutcome.IN_FORCE)
"""Outcomes after which the rule's action stands (`RulesPass.held`)."""


@dataclass(frozen=True, slots=True)
class _Read:
    """What a pass reads from one snapshot."""

    responses: dict[str, Response]
    """The latest response of each endpoint the conditions name, by name."""
    pending: list[Proposal]
    """The endpoint's proposals waiting for review."""
    recent: list[Proposal]
    """The endpoint's latest proposals, newest first: the last rule-made change among them."""


@dataclass(frozen=True, slots=True)
class RulesResult:
    recorded: RulesPass
    firing: FiringRule | None
    """The rule that held, if one did: it wins over the built-in planner, and the LLM's proposals
    may not contradict it."""


def _response(run: Run) -> Response:
    return Response(run.body, run.status_code, run.duration_ms)


def _answered(run: Run) -> bool:
    return run.status.finished and run.status is not RunStatus.SKIPPED


class RulesPlanner:
    def __init__(
        self,
        reading: ReadingFactory,
        desk: ProposalDesk,
        now: Callable[[], datetime],
        telemetry: Telemetry,
        dwell_seconds: float,
    ) -> None:
        """`dwell_seconds`: how long a rule-made change stands before another rule may replace
        it, for rules that do not say (`dwell:`)."""
        self._reading = reading
        self._desk = desk
        self._now = now
        self._telemetry = telemetry
        self._dwell_seconds = dwell_seconds

    async def evaluate(
        self, claim: AnalysisClaim, siblings: Mapping[str, Endpoint], seen: datetime | None
    ) -> RulesResult:
        """Evaluate the rules of the claimed endpoint as it stands in `siblings` (the job's
        endpoints by name, read at the pass's start); `seen` is the job's newest finished slot
        they are evaluated on."""
        started = self._now()
        endpoint = siblings.get(claim.endpoint.name, claim.endpoint)
        compiled = [_compiled(rule.when) for rule in endpoint.spec.rules]
        names = {
            endpoint.name if root in OWN_VARIABLES else root
            for found in compiled
            if isinstance(found, Condition)
            for root in found.roots
        }
        read = [siblings[name] for name in names if name in siblings]
        snapshot = await self._read(endpoint, read)
        session_id = new_id()
        evaluations: list[RuleEvaluation] = []
        firing: FiringRule | None = None
        held: int | None = None
        streak: Streak | None = None
        for number, (rule, found) in enumerate(zip(endpoint.spec.rules, compiled, strict=True), 1):
            verdict = (
                Verdict(False, found)
                if isinstance(found, str)
                else found.evaluate(snapshot.responses.get(endpoint.name), snapshot.responses)
            )
            if verdict.error is not None:
                outcome = RuleOutcome.ERROR
                evaluation = RuleEvaluation(number, rule.when, outcome, None, verdict.error)
            elif not verdict.holds:
                evaluation = RuleEvaluation(
                    number, rule.when, RuleOutcome.NOT_HELD, False, verdict.describe()
                )
            else:
                firing = FiringRule(number, endpoint.ref, rule, True)
                streak = streak_after(claim.rule_streak, number, started)
                evaluation = await self._fire(
                    firing, claim, endpoint, snapshot, session_id, streak=streak
                )
                held = number if evaluation.outcome in _STANDS else None
            evaluations.append(evaluation)
            self._telemetry.rule_evaluated(endpoint, evaluation.outcome)
            if firing is not None:
                break
        session = AnalysisSession(
            id=session_id,
            endpoint_id=endpoint.id,
            job_id=endpoint.job_id,
            planner=RULES_PLANNER,
            started_at=started,
            finished_at=self._now(),
            status=SessionStatus.EVALUATED,
            reasoning=_summary(evaluations, firing),
            tool_errors=sum(e.outcome is RuleOutcome.ERROR for e in evaluations),
            rule_evaluations=evaluations,
        )
        return RulesResult(RulesPass(session, seen, held, streak), firing)

    async def _read(self, endpoint: Endpoint, read: Sequence[Endpoint]) -> _Read:
        """The latest response of each endpoint in `read`, and the endpoint's proposals, from
        one snapshot."""
        async with self._reading() as tx:
            latest = await tx.runs.latest_runs([e.id for e in read])
            responses: dict[str, Response] = {}
            for each in read:
                run = latest.get(each.id)
                if run is not None and not _answered(run):
                    older = await tx.runs.list_runs(each.id, limit=_LOOKBACK)
                    run = next((r for r in older if _answered(r)), None)
                if run is not None:
                    responses[each.name] = _response(run)
            pending = await tx.planner.list_proposals(
                status=ProposalStatus.PENDING, endpoint_id=endpoint.id
            )
            recent = await tx.planner.list_proposals(endpoint_id=endpoint.id, limit=RECENT)
        return _Read(responses, pending, recent)

    async def _fire(
        self,
        firing: FiringRule,
        claim: AnalysisClaim,
        endpoint: Endpoint,
        snapshot: _Read,
        session_id: str,
        *,
        streak: Streak,
    ) -> RuleEvaluation:
        number, rule, action = firing.number, firing.rule, firing.rule.then
        when = rule.when
        now = self._now()
        standing = already_standing(
            action, endpoint, snapshot.pending, now, held_before=claim.rule_held == number
        )
        if standing is not None:
            return RuleEvaluation(number, when, RuleOutcome.IN_FORCE, True, standing)
        waits = held_back(rule, streak, last_rule_move(snapshot.recent), now, self._dwell_seconds)
        if waits is not None:
            return RuleEvaluation(number, when, waits.outcome, True, waits.text)
        draft = rule_draft(firing, now)
        rejection = await self._desk.rejection(draft, endpoint.id, now)
        if rejection is not None:
            return RuleEvaluation(number, when, RuleOutcome.REJECTED, True, rejection.text())
        proposer = Proposer(URGENT_RULES if rule.urgent else RULES_PLANNER, claim.mode, session_id)
        proposal = await self._desk.propose(draft, endpoint.id, proposer, now)
        outcome = (
            RuleOutcome.REFUSED
            if proposal.status is ProposalStatus.REFUSED
            else RuleOutcome.PROPOSED
        )
        detail = f"{action.text()}: {proposal_outcome(proposal)}"
        return RuleEvaluation(number, when, outcome, True, detail, proposal.id)


def _compiled(text: str) -> Condition | str:
    """The compiled condition, or why it cannot be (only for text applied before it was
    checked): recorded as the rule's error."""
    try:
        return condition(text)
    except ConditionError as error:
        return str(error)


def _summary(evaluations: Sequence[RuleEvaluation], firing: FiringRule | None) -> str:
    if firing is None:
        return f"no rule held ({len(evaluations)} evaluated)"
    last = evaluations[-1]
    return f"rule {firing.number} held: {last.detail}"
