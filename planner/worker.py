"""The planner worker: pick endpoints that need analysis, analyse each (LLM or built-in), record
the session and what it proposed, sleep until the next round.

A failing LLM never stops the worker and never touches scheduling: the session is recorded as
failed and the endpoint backs off exponentially, while its baseline keeps running. Nor does a
hanging one hold up a stop: after the grace period its calls are cut short.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from cronpilot.domain.errors import LeaseLost, LlmUnavailable, StoreUnavailable
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.model import JSON, Endpoint, new_id
from cronpilot.domain.planning.autonomy import Suggested
from cronpilot.domain.planning.context import dag_context, related_siblings
from cronpilot.domain.planning.planning import (
    AnalysisClaim,
    AnalysisContext,
    AnalysisOutcome,
    AnalysisSession,
    ProposalStatus,
    RulesPass,
    SessionStatus,
)
from cronpilot.domain.ports.bundles import PlannerStore
from cronpilot.domain.ports.clock import Clock
from cronpilot.domain.ports.search import Embedder
from cronpilot.domain.ports.telemetry import Telemetry
from cronpilot.domain.rules.rules import RuleEvaluation
from cronpilot.domain.runs.outage import described
from cronpilot.domain.runs.telemetry import NO_TELEMETRY
from cronpilot.domain.schedule.quiet_passes import (
    analysis_is_quiet,
    rules_news_is_due,
    rules_pass_is_quiet,
)
from cronpilot.planner.analysis_context import read_analysis_context
from cronpilot.planner.brief import build_brief
from cronpilot.planner.config import PlannerConfig
from cronpilot.planner.freshness import suggest
from cronpilot.planner.rules import RulesPlanner, RulesResult
from cronpilot.planner.schema_views import schema_document
from cronpilot.planner.session import Analyst, Verdict
from cronpilot.planner.summary import summed_up
from cronpilot.planner.tools import ToolBox, ToolContext
from cronpilot.runtime.timing import pause
from cronpilot.usecases.proposals import ProposalDesk, Proposer

log = logging.getLogger(__name__)

CUT_SHORT = "cut short: the planner stopped before the analysis ended"
SESSION_SHARE = 0.8
"""The share of its analysis lease a session may spend (decision 0037): the rest is left
for recording it, so that no lease lapses under a session still running."""


def session_deadline(claim: AnalysisClaim, lease_seconds: float) -> datetime:
    """When the session on `claim` must have ended: `SESSION_SHARE` into its lease."""
    return claim.lease_until - timedelta(seconds=lease_seconds * (1 - SESSION_SHARE))


@dataclass(frozen=True, slots=True)
class _Looked:
    """What the analyst's look came to: its session and outcome (neither when it was not due,
    no session when a rule spoke for it), and whether the session was quiet."""

    session: AnalysisSession | None
    outcome: AnalysisOutcome | None
    quiet: bool = False


def _evaluations(rules: RulesResult | None) -> list[RuleEvaluation]:
    session = None if rules is None else rules.recorded.session
    return [] if session is None else session.rule_evaluations


class PlannerWorker:
    def __init__(
        self,
        store: PlannerStore,
        analyst: Analyst,
        clock: Clock,
        config: PlannerConfig,
        *,
        desk: ProposalDesk,
        telemetry: Telemetry = NO_TELEMETRY,
        embedder: Embedder | None = None,
    ) -> None:
        """`desk` is built by the composition root (`adapters.bootstrap.build_proposal_desk`),
        the one that the API and the MCP server are given too."""
        self._store = store
        self._embedder = embedder
        self._analyst = analyst
        self._clock = clock
        self._config = config
        self._telemetry = telemetry
        self.desk = desk
        self._rules = RulesPlanner(
            store.reading, self.desk, clock.now, telemetry, config.rule_dwell_seconds
        )
        self._thinking: set[asyncio.Task[object]] = set()
        """The tasks waiting on the analyst (the LLM), to cut short at a stop."""
        self._cutting = False

    async def run(self, stop: asyncio.Event) -> None:
        """Analyse what needs it until `stop` is set."""
        log.info(
            "planner %s started with %s",
            self._config.worker_id,
            self._analyst.name,
            extra=log_extra("planner_start", worker_id=self._config.worker_id),
        )
        self._cutting = False
        while not stop.is_set():
            self._telemetry.loop_turned("planner")
            if not await self._round_until(stop):
                await pause(self._clock, self._config.poll_seconds, stop)

    async def _round_until(self, stop: asyncio.Event) -> bool:
        """One round (`run_round`); True if it was full. When `stop` comes meanwhile, the
        analyses still waiting on the analyst after `grace_seconds` are cut short: an LLM that
        hangs would hold the stop up for its timeout times its attempts."""
        round_ = asyncio.create_task(self._round())
        stopping = asyncio.create_task(stop.wait())
        try:
            await asyncio.wait({round_, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if not round_.done():
                _, late = await asyncio.wait({round_}, timeout=self._config.grace_seconds)
                if late:
                    self._cut_short()
            return await round_
        finally:
            for task in (stopping, round_):
                task.cancel()
            await asyncio.gather(stopping, round_, return_exceptions=True)

    async def _round(self) -> bool:
        try:
            return await self.run_round()
        except StoreUnavailable as error:
            log.warning(
                "store unavailable (%s); the planner retries",
                described(error),
                extra=log_extra("store_unavailable"),
            )
            return False

    def _cut_short(self) -> None:
        self._cutting = True
        for task in self._thinking:
            task.cancel()

    async def run_round(self) -> bool:
        """Expire lapsed proposals, then claim and analyse one batch. True if it was full."""
        now = self._clock.now()
        expired = await self._store.planner.expire_pending(now)
        if expired:
            self._telemetry.proposed(ProposalStatus.EXPIRED, count=expired)
        claims = await self._store.planner.claim_analyses(
            now, self._config.worker_id, self._config.lease_seconds, self._config.batch_size
        )
        # Concurrently: one slow LLM answer must not let the batch's other leases run out.
        await asyncio.gather(*(self._analyse_leased(claim) for claim in claims))
        return len(claims) == self._config.batch_size

    async def _analyse_leased(self, claim: AnalysisClaim) -> None:
        try:
            await self.analyse(claim)
        except LeaseLost:
            # The session outlived its lease and another planner took over: drop ours.
            log.warning(
                "lost the analysis lease on %s",
                claim.endpoint.ref,
                extra=log_extra("analysis_lease_lost", endpoint_id=claim.endpoint.id),
            )

    async def analyse_now(self, ref: str) -> list[AnalysisSession]:
        """Analyse one endpoint at once, whether or not it needs it (`planner run-once`).
        Its sessions are stored even when quiet: someone asked to see them."""
        claim = await self._store.planner.claim_endpoint(
            ref, self._clock.now(), self._config.worker_id, self._config.lease_seconds
        )
        return await self.analyse(claim, keep_quiet=True)

    async def analyse(
        self, claim: AnalysisClaim, *, keep_quiet: bool = False
    ) -> list[AnalysisSession]:
        """One pass over the claimed endpoint: its rules when it has some, then the analyst
        when due (`_consult`). Returns the sessions stored, the rules' first: a quiet one
        (`domain.schedule.quiet_passes`) is only counted, unless `keep_quiet`."""
        started = self._clock.now()
        endpoint = claim.endpoint
        context = await read_analysis_context(
            self._store.reading, endpoint, self._config.history_runs
        )
        siblings = {e.name: e for e in context.endpoints}
        rules = None
        if endpoint.spec.rules:
            rules = await self._rules.evaluate(claim, siblings, context.newest_finished_slot)
        looked = await self._consult(claim, context, siblings, rules, started)
        recorded = rules.recorded if rules is not None else None
        session, outcome = looked.session, looked.outcome
        quiet: list[AnalysisSession] = []
        if not (keep_quiet or self._config.keep_quiet):
            if (
                recorded is not None
                and recorded.session is not None
                and not await self._rules_pass_kept(claim, recorded, started)
            ):
                quiet.append(recorded.session)
                recorded = replace(recorded, session=None)
            if session is not None and looked.quiet:
                quiet.append(session)
                session = None
        await self._store.planner.finish_analysis(
            claim, self._config.worker_id, session, outcome, self._clock.now(), rules=recorded
        )
        kept = None if recorded is None else recorded.session
        sessions = [each for each in (kept, session) if each is not None]
        for each in sessions:
            self._telemetry.analysed(endpoint, each)
        for each in quiet:
            self._telemetry.passed_quietly(endpoint, each)
        if session is not None and outcome is not None:
            self._log(endpoint, session, outcome)
        return sessions

    async def _rules_pass_kept(
        self, claim: AnalysisClaim, recorded: RulesPass, started: datetime
    ) -> bool:
        """Whether the rules pass is stored (`domain.schedule.quiet_passes`): news, and not too soon
        after the endpoint's newest stored session unless it made a proposal."""
        assert recorded.session is not None
        evaluations = recorded.session.rule_evaluations
        if rules_pass_is_quiet(
            evaluations, recorded.held, claim.rule_held, recorded.streak, claim.rule_streak
        ):
            return False
        newest = await self._store.planner.list_sessions(claim.endpoint.id, limit=1)
        last_stored = newest[0].started_at if newest else None
        return rules_news_is_due(evaluations, last_stored, started)

    async def _consult(
        self,
        claim: AnalysisClaim,
        context: AnalysisContext,
        siblings: dict[str, Endpoint],
        rules: RulesResult | None,
        started: datetime,
    ) -> _Looked:
        """The analyst's session and outcome; neither when it is not due. A rule that holds
        keeps an analyst that yields to rules (the built-in one) from looking: the rule spoke for
        it on this batch of runs, which is recorded as seen."""
        if not claim.analysis_due:
            return _Looked(None, None)
        seen = context.newest_finished_slot
        firing = rules.firing if rules is not None else None
        if firing is not None and self._analyst.yields_to_rules:
            look_again = self._clock.now() + timedelta(seconds=self._config.poll_seconds)
            failing = claim.endpoint.failure_count > 0
            return _Looked(None, AnalysisOutcome(seen, failing, look_again, failed=False))
        session_id = new_id()
        latest = summed_up(claim.endpoint, context, started, self._config.brief_tokens)
        budget = context.job.budget
        suggestion = await suggest(self._store, claim.endpoint, siblings, started, budget)
        suggested = (
            None
            if suggestion is None
            else Suggested(suggestion.current_seconds, suggestion.suggested_seconds)
        )
        toolbox = ToolBox(
            ToolContext(
                claim=claim,
                siblings=siblings,
                store=self._store,
                desk=self.desk,
                proposer=Proposer(
                    self._analyst.name, claim.mode, session_id, firing, suggested=suggested
                ),
                now=self._clock.now,
                edges=context.edges,
                summed_up=[name for name in latest if name != claim.endpoint.name],
                embedder=self._embedder,
                budget=budget,
                deadline=session_deadline(claim, self._config.lease_seconds),
            )
        )
        brief = build_brief(
            claim,
            job_description=context.job.description,
            siblings=siblings,
            recent=context.recent,
            schema=schema_document(context.schema),
            now=started,
            rules=_evaluations(rules),
            graph=dag_context(claim.endpoint, context.endpoints, context.edges, context.latest),
            latest=latest,
            pasted=self._pasted(toolbox, context, started) if self._config.paste_latest else None,
            window=context.window,
            suggestion=suggestion,
        )
        verdict = await self._verdict(brief, toolbox)
        return self._analysed(
            claim, toolbox, verdict, session_id=session_id, started=started, seen=seen
        )

    def _analysed(
        self,
        claim: AnalysisClaim,
        toolbox: ToolBox,
        verdict: Verdict,
        *,
        session_id: str,
        started: datetime,
        seen: datetime | None,
    ) -> _Looked:
        """The analyst's session, when to look again, and whether the session was quiet."""
        endpoint = claim.endpoint
        finished = self._clock.now()
        failed = verdict.status is SessionStatus.FAILED
        wished = verdict.look_again_seconds
        if failed:
            look_again = self._backoff(claim.llm_failures)
        elif wished is None:
            look_again = self._config.poll_seconds
        else:
            # Sooner than the floor spends tokens on answers that have hardly changed.
            look_again = max(wished, self._config.min_look_again_seconds)
        next_at = finished + timedelta(seconds=look_again)
        session = AnalysisSession(
            id=session_id,
            endpoint_id=endpoint.id,
            job_id=endpoint.job_id,
            planner=self._analyst.name,
            started_at=started,
            finished_at=finished,
            status=verdict.status,
            reasoning=verdict.reasoning,
            confidence=verdict.confidence,
            next_analysis_at=next_at,
            prompt_tokens=verdict.prompt_tokens,
            completion_tokens=verdict.completion_tokens,
            tool_errors=toolbox.errors,
            error=verdict.error,
            tool_calls=list(toolbox.calls),
        )
        outcome = AnalysisOutcome(
            seen_slot_at=seen,
            seen_failing=endpoint.failure_count > 0,
            next_analysis_at=next_at,
            failed=failed,
        )
        return _Looked(session, outcome, analysis_is_quiet(session, toolbox.made + toolbox.held))

    def _log(self, endpoint: Endpoint, session: AnalysisSession, outcome: AnalysisOutcome) -> None:
        fields = {"endpoint_id": endpoint.id, "session_id": session.id}
        if outcome.failed:
            # One line for the whole session, however it failed: an LLM that is down, answers
            # garbage or never calls a tool is no bug of ours, and its traceback would say
            # nothing.
            log.warning(
                "analysis of %s failed (%s); next look in %.0f s",
                endpoint.ref,
                session.error,
                (outcome.next_analysis_at - session.finished_at).total_seconds(),
                extra=log_extra("analysis_failed", **fields),
            )
        else:
            log.info(
                "analysed %s: %s, %d tool calls, %d errors",
                endpoint.ref,
                session.status,
                len(session.tool_calls),
                session.tool_errors,
                extra=log_extra("analysis", status=str(session.status), **fields),
            )

    async def _verdict(self, brief: str, toolbox: ToolBox) -> Verdict:
        task = asyncio.current_task()
        assert task is not None, "analyses run in tasks of their own"
        self._thinking.add(task)
        try:
            return await self._analyst.analyse(brief, toolbox)
        except asyncio.CancelledError:
            # A cut is taken back so that the session is still recorded; a cancellation from
            # anyone else goes on.
            if not self._cutting or task.uncancel() > 0:
                raise
            return Verdict(SessionStatus.FAILED, error=CUT_SHORT)
        except LlmUnavailable as exc:
            return Verdict(SessionStatus.FAILED, error=str(exc))
        except Exception as exc:
            # A broken answer or a bug in one session must not end the worker.
            log.exception(
                "analysis of %s crashed",
                toolbox.endpoint.ref,
                extra=log_extra("analysis_error", endpoint_id=toolbox.endpoint.id),
            )
            return Verdict(SessionStatus.FAILED, error=f"internal error: {type(exc).__name__}")
        finally:
            self._thinking.discard(task)

    def _backoff(self, failures_before: int) -> float:
        delay = self._config.backoff_seconds * float(2 ** min(failures_before, 32))
        return min(delay, self._config.backoff_cap_seconds)

    @staticmethod
    def _pasted(toolbox: ToolBox, context: AnalysisContext, now: datetime) -> dict[str, JSON]:
        """The whole newest responses of the endpoint and its siblings, as `paste_latest`
        pastes them."""
        endpoint = toolbox.endpoint
        own = context.latest.get(endpoint.id)
        others = related_siblings(endpoint, context.endpoints, context.edges, now)
        return {
            endpoint.name: {
                "endpoint": endpoint.name,
                "run": None if own is None else toolbox.view(own, None, endpoint),
            },
            "siblings": {
                e.name: toolbox.view(context.latest[e.id], None, e)
                for e in others
                if e.id in context.latest
            },
        }
