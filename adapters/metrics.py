"""Prometheus metrics: the `Telemetry` port over a registry of this process's own (never the
global one, which every library may write to), and the gauges read from the store at scrape
time (decision 0018).

Labels are bounded by the catalog and the domain's enums: job and endpoint names, run status
and trigger, guardrail rules, skip kinds, approval outcomes, tool names the planner knows.
Never a URL, an id or error text. Per-run histograms are labelled by job only: a histogram
costs a series per bucket, and a fleet of thousands of endpoints would multiply that by
thousands.

The hot path pays a dict lookup per run for its children (cached by label values) and a few
increments; everything else is counted off it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from cronpilot.domain.alerts.alerts import Notification
from cronpilot.domain.model import Claim, Endpoint, Recorded, RunTrigger
from cronpilot.domain.planning.approvals import ApprovalState
from cronpilot.domain.planning.controllers import Controller
from cronpilot.domain.planning.guardrails import GuardrailRule
from cronpilot.domain.planning.planning import AnalysisSession, ProposalStatus
from cronpilot.domain.ports import CatalogFigures, Delivery, Telemetry, WorkerLoop
from cronpilot.domain.rules.rules import RuleOutcome
from cronpilot.domain.schedule.governor import due_at
from cronpilot.domain.schedule.limits import HoldReason, LimitStatus
from cronpilot.planner.tools import TOOLS

PREFIX = "cronpilot_"
CALL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
LATENESS_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 30.0, 60.0)
CLAIM_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
HTTP_METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"))
OTHER_METHOD = "other"
"""The label of a request whose method is none of `HTTP_METHODS`: a client may send any word."""
UNMATCHED_ROUTE = "unmatched"
"""The route label of a request no route matched (a 404): never the raw path."""
REQUESTED = "requested"
"""The approvals outcome of an approval asked for (its state is then `pending`)."""
OTHER_TOOL = "other"
"""The label of a tool call naming no tool the planner has: the model may send any name."""


class PrometheusTelemetry(Telemetry):
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._clock = clock
        self.loop_turns: dict[WorkerLoop, float] = {}
        """When each worker loop last went round (`clock` seconds), for readiness."""
        metric: dict[str, Any] = {"registry": self.registry}
        self._runs = Counter(
            f"{PREFIX}runs_total",
            "Runs recorded, by outcome (status) and trigger.",
            ["job", "endpoint", "outcome", "trigger"],
            **metric,
        )
        self._call_seconds = Histogram(
            f"{PREFIX}call_duration_seconds",
            "How long an endpoint call took (the slot's last attempt).",
            ["job"],
            buckets=CALL_BUCKETS,
            **metric,
        )
        self._lateness = Histogram(
            f"{PREFIX}lateness_seconds",
            "The slot's due time (its jittered call time, however a clamp or a catch-up moved "
            "the call) to the call's start, scheduled runs only.",
            ["job"],
            buckets=LATENESS_BUCKETS,
            **metric,
        )
        self._retries = Counter(
            f"{PREFIX}retries_total",
            "Calls made again within their slot.",
            ["job", "endpoint"],
            **metric,
        )
        self._claim_seconds = Histogram(
            f"{PREFIX}claim_duration_seconds",
            "One claim round trip to the store.",
            buckets=CLAIM_BUCKETS,
            **metric,
        )
        self._claimed = Counter(f"{PREFIX}claimed_slots_total", "Slots claimed.", **metric)
        self._leases_lost = Counter(
            f"{PREFIX}leases_lost_total",
            "Runs dropped because their lease was lost.",
            ["job", "endpoint"],
            **metric,
        )
        self._reaped = Counter(
            f"{PREFIX}runs_reaped_total", "Runs of dead workers abandoned by the reaper.", **metric
        )
        self._dag_skips = Counter(
            f"{PREFIX}dag_skips_total",
            "DAG dependants skipped, by reason.",
            ["job", "reason"],
            **metric,
        )
        self._overlap_skips = Counter(
            f"{PREFIX}overlap_skips_total",
            "Slots skipped because the endpoint's previous call was still running.",
            ["job", "endpoint"],
            **metric,
        )
        self._sessions = Counter(
            f"{PREFIX}planner_sessions_total",
            "Analysis sessions recorded, by status.",
            ["job", "status"],
            **metric,
        )
        self._quiet_passes = Counter(
            f"{PREFIX}planner_quiet_passes_total",
            "Planner passes that proposed nothing and found nothing new, by planner "
            "(freshness, llm, rules): counted here, not stored as sessions.",
            ["job", "endpoint", "planner"],
            **metric,
        )
        self._held = Counter(
            f"{PREFIX}planner_held_total",
            "Planner changes held back because a higher controller holds the endpoint or its "
            "last change dwells (decision 0048), by who holds it (admin, rule, planner).",
            ["job", "endpoint", "by"],
            **metric,
        )
        self._tool_calls = Counter(
            f"{PREFIX}planner_tool_calls_total",
            "Planner tool calls, by tool and whether the call was an error.",
            ["tool", "error"],
            **metric,
        )
        self._tokens = Counter(
            f"{PREFIX}planner_tokens_total",
            "LLM tokens spent by analysis sessions.",
            ["kind"],
            **metric,
        )
        self._proposals = Counter(
            f"{PREFIX}proposals_total",
            "Proposals recorded or decided, by outcome.",
            ["outcome"],
            **metric,
        )
        self._refusals = Counter(
            f"{PREFIX}guardrail_refusals_total",
            "Proposals refused by a guardrail, by rule.",
            ["rule"],
            **metric,
        )
        self._drift = Counter(
            f"{PREFIX}schema_drift_events_total",
            "Changes of shape in endpoints' output schemas.",
            ["job", "endpoint"],
            **metric,
        )
        self._rules = Counter(
            f"{PREFIX}rule_evaluations_total",
            "Response rules evaluated, by outcome (not_held, proposed, in_force, pending: "
            "waiting for its for, dwelling: the last rule-made change dwells, refused, "
            "error: the condition could not be evaluated).",
            ["job", "endpoint", "outcome"],
            **metric,
        )
        self._notifications = Counter(
            f"{PREFIX}notifications_total",
            "Webhook deliveries, by event and outcome (delivered, retry, failed).",
            ["event", "outcome"],
            **metric,
        )
        self._approvals = Counter(
            f"{PREFIX}approvals_total",
            "Approval gates by outcome: requested (a dependant began to wait), approved, "
            "rejected, expired.",
            ["outcome"],
            **metric,
        )
        self._loop_turned = Gauge(
            f"{PREFIX}worker_loop_turned_timestamp_seconds",
            "When each worker loop of this process last went round (Unix time).",
            ["loop"],
            **metric,
        )
        self._backlog = Gauge(
            f"{PREFIX}due_backlog",
            "Work due now that no worker holds: endpoints (slot) and queued runs (queued); "
            "read from the store at scrape time.",
            ["kind"],
            **metric,
        )
        self._hints = Gauge(
            f"{PREFIX}hints_active",
            "Endpoints with an unexpired planner hint; read from the store at scrape time.",
            **metric,
        )
        self._limit_in_flight = Gauge(
            f"{PREFIX}limit_in_flight",
            "Calls of each limit's key in flight (its endpoints leased); read from the store "
            "at scrape time.",
            ["limit"],
            **metric,
        )
        self._limit_held = Gauge(
            f"{PREFIX}limit_held",
            "Due slots and queued runs the last claim held back for each limit, by reason "
            "(concurrency, rate); read from the store at scrape time.",
            ["limit", "reason"],
            **metric,
        )
        self._store_up = Gauge(
            f"{PREFIX}store_up",
            "1 when the store answered this scrape's reads, else 0 (the gauges read from it "
            "keep their last values).",
            **metric,
        )
        self._requests = Counter(
            f"{PREFIX}http_requests_total",
            "API requests answered, by method, route template (`/runs/{run_id}`, never the "
            "path asked for) and status.",
            ["method", "route", "status"],
            **metric,
        )
        self._request_seconds = Histogram(
            f"{PREFIX}http_request_duration_seconds",
            "How long the API took to answer a request, by method and route template.",
            ["method", "route"],
            buckets=REQUEST_BUCKETS,
            **metric,
        )
        self._run_series: dict[tuple[str, str, str, str], Any] = {}
        self._job_series: dict[str, tuple[Any, Any]] = {}

    # --- the hot path ---------------------------------------------------------------------

    def claimed(self, count: int, seconds: float) -> None:
        self._claim_seconds.observe(seconds)
        if count:
            self._claimed.inc(count)

    def recorded(self, claim: Claim, recorded: Recorded) -> None:
        run = recorded.run
        endpoint = claim.endpoint
        key = (endpoint.job_name, endpoint.name, run.status.value, run.trigger.value)
        runs = self._run_series.get(key)
        if runs is None:
            runs = self._run_series[key] = self._runs.labels(*key)
        runs.inc()
        job = self._job_series.get(endpoint.job_name)
        if job is None:
            job = self._job_series[endpoint.job_name] = (
                self._call_seconds.labels(endpoint.job_name),
                self._lateness.labels(endpoint.job_name),
            )
        call_seconds, lateness = job
        if run.duration_ms is not None:
            call_seconds.observe(run.duration_ms / 1000)
        if run.trigger is RunTrigger.SCHEDULE:
            first = run.attempts[0].started_at if run.attempts else run.started_at
            lateness.observe(max((first - due_at(claim)).total_seconds(), 0.0))
        if run.attempt > 1:
            self._retries.labels(endpoint.job_name, endpoint.name).inc(run.attempt - 1)
        for kind in recorded.skips:
            self._dag_skips.labels(endpoint.job_name, kind.value).inc()
        if recorded.overlapped:
            self._overlap_skips.labels(endpoint.job_name, endpoint.name).inc(recorded.overlapped)
        if recorded.approvals:
            self._approvals.labels(REQUESTED).inc(len(recorded.approvals))

    def loop_turned(self, loop: WorkerLoop) -> None:
        self.loop_turns[loop] = self._clock()

    # --- beside it ------------------------------------------------------------------------

    def lease_lost(self, endpoint: Endpoint) -> None:
        self._leases_lost.labels(endpoint.job_name, endpoint.name).inc()

    def reaped(self, count: int) -> None:
        self._reaped.inc(count)

    def analysed(self, endpoint: Endpoint, session: AnalysisSession) -> None:
        self._sessions.labels(endpoint.job_name, session.status.value).inc()
        self._spent(session)

    def passed_quietly(self, endpoint: Endpoint, session: AnalysisSession) -> None:
        # `llm:<model>` counts as `llm`: the label stays one of three values.
        planner = session.planner.partition(":")[0]
        self._quiet_passes.labels(endpoint.job_name, endpoint.name, planner).inc()
        self._spent(session)

    def held_back(self, endpoint: Endpoint, by: Controller) -> None:
        self._held.labels(endpoint.job_name, endpoint.name, by.name.lower()).inc()

    def _spent(self, session: AnalysisSession) -> None:
        for call in session.tool_calls:
            tool = call.name if call.name in TOOLS else OTHER_TOOL
            self._tool_calls.labels(tool, "true" if call.error else "false").inc()
        self._tokens.labels("prompt").inc(session.prompt_tokens)
        self._tokens.labels("completion").inc(session.completion_tokens)

    def proposed(
        self, status: ProposalStatus, refused_by: GuardrailRule | None = None, count: int = 1
    ) -> None:
        self._proposals.labels(status.value).inc(count)
        if refused_by is not None:
            self._refusals.labels(refused_by.value).inc(count)

    def drifted(self, endpoint: Endpoint, events: int) -> None:
        self._drift.labels(endpoint.job_name, endpoint.name).inc(events)

    def rule_evaluated(self, endpoint: Endpoint, outcome: RuleOutcome) -> None:
        self._rules.labels(endpoint.job_name, endpoint.name, outcome.value).inc()

    def notified(self, notification: Notification, outcome: Delivery) -> None:
        self._notifications.labels(notification.event.value, outcome).inc()

    def approval_decided(self, state: ApprovalState) -> None:
        self._approvals.labels(state.value).inc()

    # --- the API's requests ---------------------------------------------------------------

    def served(self, method: str, route: str | None, status: int, seconds: float) -> None:
        """One API request answered: `route` is the template the router matched (None: no
        route matched)."""
        method = method if method in HTTP_METHODS else OTHER_METHOD
        route = UNMATCHED_ROUTE if route is None else route
        self._requests.labels(method, route, str(status)).inc()
        self._request_seconds.labels(method, route).observe(seconds)

    # --- at scrape time -------------------------------------------------------------------

    def store_figures(self, figures: CatalogFigures | None) -> None:
        """Set the gauges read from the store; None when the store could not be read."""
        self._store_up.set(0 if figures is None else 1)
        if figures is not None:
            self._backlog.labels("slot").set(figures.due)
            self._backlog.labels("queued").set(figures.queued_due)
            self._hints.set(figures.hints_active)

    def limit_figures(self, statuses: Sequence[LimitStatus]) -> None:
        """Set each limit's gauges from what the store recorded on it."""
        for status in statuses:
            state = status.state
            self._limit_in_flight.labels(state.key).set(status.in_flight)
            for reason in HoldReason:
                held = state.held if state.hold_reason is reason else 0
                self._limit_held.labels(state.key, reason.value).set(held)

    def exposition(self) -> tuple[bytes, str]:
        """The registry in Prometheus' text format, and its content type."""
        now, wall = self._clock(), time.time()
        for loop, turned in self.loop_turns.items():
            self._loop_turned.labels(loop).set(wall - (now - turned))
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
