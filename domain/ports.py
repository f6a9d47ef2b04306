"""Ports: what the workers need from the outside world. Adapters implement them; tests swap them.

Every repository method takes `now` from the caller's clock: no store decides the time itself,
so a fake clock drives memory, SQLite and PostgreSQL alike.

Each adapter names the port it implements as its base class (`class SqlClaims(ClaimRepository)`):
mypy then checks every method against the port where the adapter is defined, and a method it
lacks makes the class abstract, whether or not anything in the package hands it out as the
port. Tests' fakes may stay structural.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Literal, Protocol, Self

# For annotations only: every adapter imports this module, and importing these at run time
# would load most of the domain into any process that needs one port (a CLI read command).
if TYPE_CHECKING:
    from cronpilot.domain.alerts import AlertEvent, Notification, NotificationStatus
    from cronpilot.domain.approvals import Approval, ApprovalState
    from cronpilot.domain.audit import AuditAction, AuditCursor, AuditEntry
    from cronpilot.domain.autonomy import AutonomyStep
    from cronpilot.domain.dag import DagWait
    from cronpilot.domain.errors import CronpilotError
    from cronpilot.domain.graph import Edge, EdgeKey, EdgeSighting, EdgeType
    from cronpilot.domain.guardrails import GuardrailRule
    from cronpilot.domain.model import (
        JSON,
        Claim,
        Endpoint,
        EndpointSpec,
        Finish,
        HttpRequest,
        IntervalHint,
        Job,
        OneShotHint,
        Pause,
        Recorded,
        Response,
        Run,
        RunStatus,
        RunTrigger,
    )
    from cronpilot.domain.notify_targets import MailMessage, SmtpServer
    from cronpilot.domain.outputs import DriftEvent, OutputSchema
    from cronpilot.domain.paging import Cursor
    from cronpilot.domain.planning import (
        AnalysisClaim,
        AnalysisOutcome,
        AnalysisSession,
        ChatReply,
        Proposal,
        ProposalStatus,
        RulesPass,
    )
    from cronpilot.domain.rules import RuleOutcome
    from cronpilot.domain.time_range import TimeRange
    from cronpilot.domain.tokens import ApiToken, ConsoleSession
    from cronpilot.domain.tracing import SpanName, TraceContext
    from cronpilot.domain.watch import WatchEpisode
    from cronpilot.domain.workers import WorkerActivity, WorkerInfo

WorkerLoop = Literal["scheduler", "planner"]
Delivery = Literal["delivered", "retry", "failed"]


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait `seconds` of this clock's time (a fake clock advances instead of waiting)."""
        ...


class Waker(Protocol):
    """Wakes sleeping schedulers when an endpoint becomes due earlier than they planned."""

    async def notify(self) -> None:
        """Wake every scheduler sharing the store (other processes too, where the store allows)."""
        ...

    async def wait(self, timeout: float) -> bool:
        """Sleep up to `timeout` seconds; True if woken by `notify`, False on timeout."""
        ...

    async def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class JobDeclaration:
    job: Job
    endpoints: Sequence[EndpointSpec]


@dataclass(slots=True)
class ApplyReport:
    """Refs (`job` or `job/endpoint`) by what `apply` did with them."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)
    """`job/endpoint` refs stored under a declared job but not declared: left alone, not
    deleted, reported so that a user can see what the file no longer mentions."""


@dataclass(frozen=True, slots=True)
class CatalogFigures:
    """Counts over the whole catalog at one instant, for gauges read at scrape time."""

    due: int
    """Endpoints due now that no worker holds (`domain.claiming.is_due`): the backlog."""
    queued_due: int
    """Queued runs (manual, backfill) whose `due_at` has come."""
    hints_active: int
    """Endpoints with an interval or one-shot hint that has not expired."""


@dataclass(frozen=True, slots=True)
class RunFilter:
    """Which runs a paged list holds: each field set narrows it."""

    job_id: str | None = None
    endpoint_id: str | None = None
    status: RunStatus | None = None
    trigger: RunTrigger | None = None
    within: TimeRange | None = None
    """Runs whose slot falls in it."""


class CatalogRepository(Protocol):
    """Jobs and endpoints as declared, plus their runtime schedule state."""

    async def apply(self, declarations: Sequence[JobDeclaration], now: datetime) -> ApplyReport:
        """Create or update every job and endpoint in one transaction (all or nothing).

        Matching is by job name and (job, endpoint name); ids of existing rows are kept, runtime
        state (hints, pause, failures, last slot) survives, the next run is re-planned. Jobs and
        endpoints absent from `declarations` are left alone; endpoints of a declared job that
        are not declared are reported `absent` (by name order within each job). Applying the
        same declarations twice reports everything `unchanged` the second time.
        """
        ...

    async def list_jobs(self) -> list[Job]:
        """All jobs ordered by name."""
        ...

    async def get_job(self, name: str) -> Job:
        """Raises `JobNotFound`."""
        ...

    async def list_endpoints(self, job_name: str | None = None) -> list[Endpoint]:
        """Endpoints ordered by (job name, endpoint name), optionally of one job."""
        ...

    async def get_endpoint(self, ref: str, *, for_update: bool = False) -> Endpoint:
        """By id or by `job/endpoint`; raises `EndpointNotFound`.

        `for_update` holds the endpoint against other writers until the unit of work ends
        (PostgreSQL's row lock; SQLite's write unit and the memory store's unit already hold
        every other writer off): for a decision that a concurrent writer could make stale."""
        ...

    async def figures(self, now: datetime) -> CatalogFigures:
        """The catalog's counts at `now`, in one read."""
        ...

    async def set_pause(self, endpoint_id: str, pause: Pause | None, now: datetime) -> Endpoint:
        """Pause (or resume with None) and re-plan; returns the updated endpoint.

        Raises `EndpointNotFound`."""
        ...

    async def set_job_pause(self, name: str, pause: Pause | None) -> Job:
        """Pause the job `name` (or resume it with None); its endpoints keep their own pauses
        and plans, and the claim skips them while the job's pause holds
        (`domain.pauses.job_holds`). Returns the updated job; raises `JobNotFound`."""
        ...

    async def set_hints(
        self,
        endpoint_id: str,
        interval_hint: IntervalHint | None,
        oneshot_hint: OneShotHint | None,
        now: datetime,
    ) -> Endpoint:
        """Replace both hints and re-plan; returns the updated endpoint.

        Raises `EndpointNotFound`."""
        ...

    async def set_volatile_fields(self, endpoint_id: str, fields: Sequence[str]) -> None:
        """Record the fields of the endpoint's responses learnt volatile (canonical paths,
        `domain.change_detection.volatile_fields`) in place of those recorded before; nothing
        else of the endpoint changes. Raises `EndpointNotFound`."""
        ...

    async def delete_endpoints(self, endpoint_ids: Collection[str]) -> None:
        """Delete the endpoints and everything recorded of them: runs (queued and running
        ones too), proposals, analysis sessions and planner state, output schema and drift,
        DAG waits, notifications. Graph edges are kept by node name: see
        `GraphRepository.forget`. Unknown ids are ignored."""
        ...

    async def delete_job(self, name: str) -> None:
        """Delete the job with its endpoints (as `delete_endpoints`). Raises `JobNotFound`."""
        ...


class ClaimRepository(Protocol):
    """The distributed heart: claiming due slots, finishing them fenced, reaping the dead."""

    async def claim_due(
        self,
        now: datetime,
        worker_id: str,
        lease_seconds: float,
        limit: int,
        due_by: datetime | None = None,
    ) -> list[Claim]:
        """Atomically lease up to `limit` unleased endpoints due by `due_by` (default `now`;
        later to claim slots ahead of time), earliest `next_run_at` first, and insert a
        `running` run for each slot. The lease runs from `now`. Concurrent callers never get
        the same endpoint. A slot that already has a run is not claimed again.

        Queued runs (`enqueue`) come first: an unleased endpoint with a queued run due by
        `due_by` is leased and its earliest queued run turned `running` (one per endpoint per
        call); the claim carries it in `Claim.queued`. A queued run of a leased endpoint waits."""
        ...

    async def enqueue(self, queued: Sequence[Run]) -> list[Run]:
        """Insert `queued` runs (status `queued`, see `domain.transitions.queued_run`) in one
        transaction, leaving out each whose slot already has a run of its endpoint, whatever
        that run's status (the slot key). Returns the runs inserted, in order."""
        ...

    async def extend_lease(self, claim: Claim, worker_id: str, until: datetime) -> None:
        """Push the lease further for a long run. Raises `LeaseLost` if it is no longer ours."""
        ...

    async def finish_many(self, finishes: Sequence[Finish]) -> list[Recorded | CronpilotError]:
        """Record each finish, fenced on its own: complete the run, re-plan the endpoint
        (`after_slot`, which may auto-pause it), add the notifications the run raises to the
        outbox (`domain.alerts.run_notifications`) and, for an endpoint with dependants, report
        the run to them as `domain.dag.advance` says (save waits, record skipped runs, lease and
        start every dependant now ready whose endpoint is free; a ready one that is leased stays
        a ready wait for `DagRepository.claim_ready`; store the approvals gated dependants ask
        for, with their notifications), all in the transaction of its run, so a
        worker dying in between cannot record the run and lose its DAG run. In as few
        transactions as the store allows (callers batch: group commit).

        Returns, in order, each finish's `Recorded` or its error: `LeaseLost` (nothing written)
        when the lease or the run is no longer ours, `StoreUnavailable` when its transaction
        failed; one item's error never stops the others. Raises only for a bug."""
        ...

    async def release(self, claim: Claim, worker_id: str) -> None:
        """Give back a claim whose call never started: delete its `running` run (a claimed
        queued run goes back to `queued`, as it was) and free the lease, keeping `next_run_at`
        so another worker runs the slot. No-op if not ours."""
        ...

    async def abandon(self, claim: Claim, worker_id: str, reason: str, now: datetime) -> None:
        """Mark an interrupted run `abandoned` (shutdown), free the lease and re-plan.
        No-op if not ours."""
        ...

    async def cancel(self, claim: Claim, worker_id: str, now: datetime) -> None:
        """Record a run cut short on a cancel `cancelled` (`domain.cancelling.cancelled_run`),
        free the lease and re-plan. No-op if not ours."""
        ...

    async def cancels_asked(self, run_ids: Collection[str]) -> set[str]:
        """Which of `run_ids` (runs this worker holds) someone asked to cancel
        (`Run.cancel_requested_by`): one read, by key."""
        ...

    async def reap(self, now: datetime) -> int:
        """Mark `running` runs whose lease has expired `abandoned`, free their endpoints and
        re-plan them (`domain.transitions.after_reap`). Queued runs are not touched. Returns how
        many runs were reaped."""
        ...

    async def next_due_at(self) -> datetime | None:
        """The earliest `next_run_at` among unleased endpoints, or `due_at` among the queued
        runs of unleased endpoints, or None."""
        ...


class RunRepository(Protocol):
    async def list_runs(self, endpoint_id: str, limit: int = 50, offset: int = 0) -> list[Run]:
        """Runs of one endpoint, newest slot first."""
        ...

    async def page_runs(
        self, where: RunFilter, limit: int, after: Cursor | None = None
    ) -> list[Run]:
        """Up to `limit` runs matching `where`, newest (slot, id) first, each strictly after
        `after` in that order (keyset paging: `Cursor(run.slot_at, run.id)` of the last run
        of the page before)."""
        ...

    async def get_run(self, run_id: str) -> Run:
        """Raises `RunNotFound`."""
        ...

    async def dag_run_runs(self, dag_run_id: str) -> list[Run]:
        """The runs of one DAG run: the run that began it (its trace id is `dag_run_id`) and
        its dependants' runs, oldest start first."""
        ...

    async def ask_cancel(self, asked: Run, status: RunStatus) -> bool:
        """Write what a cancel changes of `asked` (`domain.cancelling.cancel_asked`: status,
        end, message, who asked) if the stored run's status is still `status`; False when it
        moved meanwhile (a worker started or finished it), and nothing is written."""
        ...

    async def latest_runs(self, endpoint_ids: Sequence[str]) -> dict[str, Run]:
        """The newest finished-or-running run of each endpoint that has one."""
        ...

    async def prune(self, keep_per_endpoint: int) -> int:
        """Delete all but the newest `keep_per_endpoint` finished runs of each endpoint; never
        deletes a `running` or `queued` run. Returns how many were deleted."""
        ...

    async def slots_taken(self, endpoint_id: str, start: datetime, end: datetime) -> set[datetime]:
        """The slots in [start, end] that have a run of the endpoint, whatever its status."""
        ...

    async def newest_finished_slot(self, job_id: str) -> datetime | None:
        """The newest slot of the finished runs of the job's endpoints (all of them), or None
        when none has finished (the slot `domain.planning.needs_analysis` compares)."""
        ...


class PlannerRepository(Protocol):
    """The planner's side of the store: which endpoints to analyse, sessions and proposals."""

    async def claim_analyses(
        self, now: datetime, worker_id: str, lease_seconds: float, limit: int
    ) -> list[AnalysisClaim]:
        """Atomically lease up to `limit` endpoints that need analysis (`needs_analysis`) or
        their rules evaluated (`needs_rules`), earliest next analysis first; each claim says
        which (`AnalysisClaim.analysis_due`). Concurrent callers never get the same endpoint (SKIP
        LOCKED on PostgreSQL); a lease that has expired may be claimed again."""
        ...

    async def claim_endpoint(
        self, ref: str, now: datetime, worker_id: str, lease_seconds: float
    ) -> AnalysisClaim:
        """Lease one endpoint (by id or by `job/endpoint`) for analysis now, whether or not it
        needs it (`run-once`).

        Raises `EndpointNotFound`, or `AnalysisBusy` while another worker's lease is live."""
        ...

    async def finish_analysis(
        self,
        claim: AnalysisClaim,
        worker_id: str,
        session: AnalysisSession | None,
        outcome: AnalysisOutcome | None,
        now: datetime,
        *,
        rules: RulesPass | None = None,
    ) -> None:
        """In one transaction: store the sessions of the pass and update the endpoint's
        planner state (its last look at `now` too), and free the lease. The analyst's
        `session` and `outcome` (what it has seen, when to look again, the failure backoff)
        are None when it was not due, the session alone when the pass was quiet; `rules` (the
        rules session, None when quiet, what the rules have seen and the rule that stands) is
        None when the endpoint has no rules. Raises `LeaseLost` (and writes nothing) when the
        lease is no longer ours."""
        ...

    async def last_analysed(self, endpoint_id: str) -> datetime | None:
        """When a planner pass over the endpoint last finished, stored or quiet ("last looked
        at"); None when none has, or for an unknown endpoint."""
        ...

    async def add_proposal(
        self, proposal: Proposal, notifications: Sequence[Notification] = ()
    ) -> None:
        """Store `proposal` and, in the same transaction, the `notifications` it raises
        (`domain.alerts.proposal_notifications`): both or neither."""
        ...

    async def get_proposal(self, proposal_id: str) -> Proposal:
        """Raises `ProposalNotFound`."""
        ...

    async def list_proposals(
        self,
        status: ProposalStatus | None = None,
        job_name: str | None = None,
        endpoint_id: str | None = None,
        limit: int = 100,
        after: Cursor | None = None,
        *,
        within: TimeRange | None = None,
    ) -> list[Proposal]:
        """Newest first (ids ascending within one time), optionally filtered (`within`: made
        in that window); with `after`, those that follow it (`domain.paging.follows`, ids
        ascending)."""
        ...

    async def decide(
        self,
        proposal_id: str,
        status: ProposalStatus,
        decided_by: str,
        outcome: str,
        now: datetime,
    ) -> Proposal:
        """Move a pending proposal to `status`, recording who decided, when and the outcome.

        Raises `ProposalNotFound`, or `ProposalNotPending` when someone decided it first."""
        ...

    async def count_applied(self, endpoint_id: str, since: datetime) -> int:
        """How many of the endpoint's proposals were applied at or after `since` (the rate the
        guardrails weigh); 0 for an unknown endpoint."""
        ...

    async def expire_pending(self, now: datetime) -> int:
        """Mark pending proposals whose `expires_at` has passed `expired`; returns how many."""
        ...

    async def supersede(self, newer: Proposal) -> int:
        """Mark the pending proposals of `newer`'s endpoint, other than `newer`, superseded by
        it (`domain.planning.superseded`); returns how many."""
        ...

    async def get_session(self, session_id: str) -> AnalysisSession:
        """With its tool calls in order. Raises `SessionNotFound`."""
        ...

    async def autonomy_history(self, job_id: str) -> list[AutonomyStep]:
        """The job's graded-autonomy steps, oldest first; the last one holds its threshold
        (`domain.autonomy`). Empty for a job without decisions, or an unknown one."""
        ...

    async def add_autonomy_step(self, step: AutonomyStep) -> None:
        """Append `step` to its job's history."""
        ...

    async def list_sessions(
        self,
        endpoint_id: str | None = None,
        limit: int = 50,
        after: Cursor | None = None,
        *,
        within: TimeRange | None = None,
    ) -> list[AnalysisSession]:
        """Newest first (ids ascending within one time), with their tool calls, optionally
        those started `within` a window; with `after`, those that follow it
        (`domain.paging.follows`, ids ascending)."""
        ...

    async def prune_sessions(
        self, sessions_before: datetime, rules_before: datetime, limit: int
    ) -> int:
        """Delete up to `limit` sessions (with their tool calls and rule evaluations) that
        `domain.retention.session_expired` says have had their time, oldest first, in one
        transaction; returns how many."""
        ...

    async def prune_proposals(self, before: datetime, limit: int) -> int:
        """Delete up to `limit` decided proposals made before `before`
        (`domain.retention.proposal_expired`: never a pending one), oldest first, in one
        transaction; returns how many."""
        ...


class ChatModel(Protocol):
    """An LLM speaking the chat-completions protocol with tools."""

    @property
    def name(self) -> str:
        """Who proposes, in audits: `llm:<model>`."""
        ...

    async def complete(
        self,
        messages: Sequence[JSON],
        tools: Sequence[JSON],
        force_tool: str | None = None,
        *,
        seconds: float | None = None,
    ) -> ChatReply:
        """One completion; with `force_tool` the model must call that tool. Retries transient
        failures itself; raises `LlmUnavailable` when it gives up. Given `seconds`, it gives up
        once they are spent: no request runs, and no retry waits, past them."""
        ...

    async def close(self) -> None: ...


class SchemaRepository(Protocol):
    """Learnt output schemas and their drift history."""

    async def get_output_schema(self, endpoint_id: str) -> OutputSchema | None:
        """The endpoint's output schema as learnt so far, or None before its first body."""
        ...

    async def get_output_schemas(self, endpoint_ids: Collection[str]) -> dict[str, OutputSchema]:
        """The output schemas learnt so far of those of `endpoint_ids` that have stored a body,
        by endpoint id; unknown ids are left out. A job's worth in one call, not one each."""
        ...

    async def save_output_schema(
        self, schema: OutputSchema, drift: Sequence[DriftEvent], now: datetime, *, rebuilt: bool
    ) -> bool:
        """Store `schema` and append `drift`, only if the stored version is still
        `schema.version` (none stored counts as 0); then bump `schema.version`. False, and
        nothing written, if another writer got there first. `rebuilt` replaces the drift
        history instead of appending to it. Raises `EndpointNotFound` for an unknown endpoint."""
        ...

    async def list_drift(self, endpoint_id: str, limit: int = 50) -> list[DriftEvent]:
        """Drift events of one endpoint, newest first."""
        ...


@dataclass(frozen=True, slots=True)
class StoredVector:
    """An endpoint's embedding by one model, and the digest of the text it was made from."""

    endpoint_id: str
    model: str
    digest: str
    vector: Sequence[float]
    """A store may hand back a compact sequence (SQL: `array('f')` over the stored bytes, not
    a tuple of Python floats, 30 times slower to make for a catalog's worth)."""


class VectorRepository(Protocol):
    """The search index's embeddings, one per endpoint and model."""

    async def get_vectors(self, model: str) -> dict[str, StoredVector]:
        """The vectors made by `model`, by endpoint id (deleted endpoints' are gone)."""
        ...

    async def save_vectors(self, vectors: Sequence[StoredVector], now: datetime) -> None:
        """Insert or replace each vector (by endpoint and model). Unknown endpoints are
        skipped: one deleted meanwhile has nothing left to find."""
        ...


class Embedder(Protocol):
    """Turns texts into vectors that are close when the texts mean alike."""

    @property
    def model(self) -> str:
        """Names the model: vectors of two models are never compared."""
        ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order. Raises `EmbedderUnavailable` when the model cannot
        be loaded or reached."""
        ...


class GraphRepository(Protocol):
    """The tool graph's one edge store."""

    async def record(self, sightings: Sequence[EdgeSighting], now: datetime) -> None:
        """Fold each sighting into its edge (`domain.graph.sighted`), in order, in one
        transaction: repeats add up, several types per pair and self-loops are kept."""
        ...

    async def list_edges(self, job: str | None = None) -> list[Edge]:
        """All edges, or those with an end in `job` (the job node or one of its endpoints),
        ordered by (from, to, type)."""
        ...

    async def retract(
        self, edge_type: EdgeType, into: Collection[str], keep: Collection[EdgeKey]
    ) -> int:
        """Delete the edges of `edge_type` ending in one of the nodes `into` that no trace has
        counted (count 0), except those keyed in `keep`: a withdrawn `depends_on`, a provides
        edge the learnt schemas no longer support. Counted edges stay: they are history.
        Returns how many were deleted."""
        ...

    async def forget(self, nodes: Collection[str]) -> int:
        """Delete every edge from or to one of `nodes`, counted or not: the nodes themselves
        are gone (deleted endpoints or jobs). Returns how many were deleted."""
        ...


class DagRepository(Protocol):
    """DAG runs: dependants waiting for their parents, started as children of their runs."""

    async def claim_ready(
        self, now: datetime, worker_id: str, lease_seconds: float, limit: int
    ) -> list[Claim]:
        """Start up to `limit` ready waits whose endpoint is no longer leased."""
        ...

    async def add_ready(self, wait: DagWait) -> None:
        """Store `wait` (ready: every parent arrived) in place of any wait of its endpoint in
        its DAG run: a sweep (`claim_ready`) starts its endpoint once free."""
        ...

    async def list_waits(self) -> list[DagWait]:
        """Every open wait, by (dag run, endpoint id)."""
        ...

    async def drop_stale_waits(self, created_before: datetime) -> int:
        """Delete waits made before `created_before`: a parent that never finishes (its worker
        died during the call, and the reaper abandoned its run) leaves one that nothing
        completes. A wait held for a pending approval stays: its approval's expiry ends it.
        Returns how many were deleted."""
        ...

    async def trace_neighbours(self, run: Run) -> tuple[Run | None, Run | None]:
        """For a child run: its parent run (by `parent_trace_id`) and the sibling (same
        parent) that started just before it, each None when absent or pruned."""
        ...


class ApprovalRepository(Protocol):
    """Approval gates (`domain.approvals`). An approval is written with the run whose report
    made its dependant ready (`ClaimRepository.finish_many`); here it is read and decided."""

    async def get_approval(self, approval_id: str) -> Approval:
        """By id or a unique prefix of one. Raises `ApprovalNotFound` (or `AmbiguousId`)."""
        ...

    async def list_approvals(
        self,
        state: ApprovalState | None = None,
        job_id: str | None = None,
        endpoint_id: str | None = None,
        limit: int = 100,
        after: Cursor | None = None,
    ) -> list[Approval]:
        """Newest request first (ids descending within one time), optionally filtered; with
        `after`, those that follow it (`domain.paging.follows`)."""
        ...

    async def list_lapsed(self, now: datetime, limit: int) -> list[Approval]:
        """Up to `limit` pending approvals whose `expires_at` is at or before `now`, the
        earliest expiry first."""
        ...

    async def decide(
        self, approval_id: str, state: ApprovalState, by: str, reason: str | None, now: datetime
    ) -> Approval:
        """Decide a pending approval (by id or prefix) in one transaction, recording who, when
        and why. Approved: its dependant's wait becomes ready, for `DagRepository.claim_ready`
        to start. Rejected or expired: the wait ends in a recorded skip that its own dependants
        hear of (`domain.dag.declined`). Raises `ApprovalNotFound`, or `ApprovalNotPending`
        when it was decided already (by someone faster, too)."""
        ...

    async def prune(self, before: datetime, limit: int) -> int:
        """Delete up to `limit` decided approvals asked for before `before`
        (`domain.retention.approval_expired`: never a pending one), oldest first, in one
        transaction; returns how many."""
        ...


class NotificationRepository(Protocol):
    """The alerts outbox. Rows are written with the run (`ClaimRepository.finish_many`)
    or the proposal (`PlannerRepository.add_proposal`) that
    raised them; a notifier claims them, delivers them and records the outcome here. Delivery
    is at least once: a worker that dies mid-delivery leaves a lease that expires."""

    async def claim_due(
        self, now: datetime, worker_id: str, lease_seconds: float, limit: int
    ) -> list[Notification]:
        """Atomically lease up to `limit` pending notifications whose next attempt is due by
        `now` and that no live lease holds, oldest next attempt first (an expired lease may be
        claimed again). Concurrent callers never get the same row (SKIP LOCKED on PostgreSQL).
        The rows come back with their lease."""
        ...

    async def mark_delivered(self, notification_id: str, worker_id: str, now: datetime) -> bool:
        """Count the attempt and mark the notification delivered at `now`, freeing its lease.
        False, and nothing written, when `worker_id` no longer holds the lease (or the row is
        gone with its endpoint)."""
        ...

    async def mark_failed(
        self,
        notification_id: str,
        worker_id: str,
        error: str,
        retry_at: datetime | None,
        now: datetime,
    ) -> bool:
        """Count the failed attempt and keep `error`, freeing the lease: pending again from
        `retry_at`, or `failed` for good when `retry_at` is None. False, and nothing written,
        when `worker_id` no longer holds the lease."""
        ...

    async def list_notifications(
        self,
        job_id: str | None = None,
        endpoint_id: str | None = None,
        status: NotificationStatus | None = None,
        limit: int = 100,
        after: Cursor | None = None,
        *,
        within: TimeRange | None = None,
    ) -> list[Notification]:
        """Newest first (by creation, then id), optionally filtered (`within`: raised in that
        window); with `after`, those that follow it (`domain.paging.follows`)."""
        ...

    async def prune(self, before: datetime, limit: int) -> int:
        """Delete up to `limit` delivered or given-up notifications raised before `before`
        (`domain.retention.notification_expired`: never one still to deliver), oldest first,
        in one transaction; returns how many."""
        ...

    async def watched_due(self, now: datetime, limit: int) -> list[Endpoint]:
        """Up to `limit` endpoints watched for missed runs (`missed_after` set) that are due by
        `now`, earliest `next_run_at` first (`domain.watch.missed_slot` then tells which have
        missed their slot). Header secrets may be left sealed: only the schedule and the
        alerts are read."""
        ...

    async def open_episodes(self, kind: AlertEvent) -> list[WatchEpisode]:
        """The episodes of `kind` not recovered yet, oldest first."""
        ...

    async def open_episode(self, episode: WatchEpisode, raised: Sequence[Notification]) -> bool:
        """Record `episode` and add `raised` to the outbox, in one transaction; False, and
        nothing written, when an episode of its subject, kind and start is recorded already,
        or one of its subject and kind is still open (another worker noticed it first)."""
        ...

    async def close_episode(
        self, episode_id: str, now: datetime, raised: Sequence[Notification]
    ) -> bool:
        """Mark the open episode recovered at `now` and add `raised` to the outbox, in one
        transaction; False, and nothing written, when it is recovered already (or gone)."""
        ...

    async def prune_episodes(self, before: datetime, limit: int) -> int:
        """Delete up to `limit` recovered episodes opened before `before` (never an open one),
        oldest first, in one transaction; returns how many."""
        ...


class WorkerRepository(Protocol):
    """The workers registry: scheduler workers register and heartbeat here."""

    async def beat(self, worker: WorkerInfo) -> None:
        """Store `worker` as it is now (insert, or replace the row of its id: a restarted
        worker that kept its id shows its new process)."""
        ...

    async def list_active(self, seen_since: datetime, runs_since: datetime) -> list[WorkerActivity]:
        """Workers last seen at or after `seen_since`, each with how many runs it started at or
        after `runs_since` (its runs by `worker_id`), in `domain.workers.by_last_seen` order."""
        ...

    async def prune(self, seen_before: datetime) -> int:
        """Forget workers last seen before `seen_before`; returns how many."""
        ...


class AccessRepository(Protocol):
    """API tokens and the audit log. Audit entries are written by the use cases, in the unit of
    work of the change they record."""

    async def add_token(self, token: ApiToken) -> None:
        """Store a new token. Raises `ConflictError` when a live token has its name: callers
        check first (`get_live_token`), the store's unique key on live names stops a race."""
        ...

    async def get_live_token(self, name_or_id: str) -> ApiToken:
        """The live token of that name, else the live token of that id. Raises
        `TokenNotFound`."""
        ...

    async def find_token(self, secret_hash: str) -> ApiToken | None:
        """The token, live or revoked, whose secret (or replaced secret, `previous_hash`)
        hashes to `secret_hash`; None if none."""
        ...

    async def rotate_token(self, token: ApiToken) -> ApiToken:
        """Store the secret hashes of `token` (`secret_hash`, `previous_hash`,
        `previous_until`) on the live token of its id; returns it as stored. Raises
        `TokenNotFound` when no live token has that id."""
        ...

    async def add_session(self, session: ConsoleSession) -> None:
        """Store a new console session."""
        ...

    async def find_session(self, id_hash: str) -> ConsoleSession | None:
        """The console session of that id's hash, expired or not; None if none."""
        ...

    async def end_session(self, id_hash: str) -> None:
        """Delete the console session of that id's hash; nothing if there is none."""
        ...

    async def list_tokens(self, *, include_revoked: bool = False) -> list[ApiToken]:
        """Live tokens (and revoked ones if asked) by name, then creation time."""
        ...

    async def revoke_token(self, token_id: str, actor: str, now: datetime) -> ApiToken:
        """Revoke a live token at `now` for `actor`; returns it revoked. Raises `TokenNotFound`
        when no live token has that id (revoked already, or never was)."""
        ...

    async def mark_used(self, token_id: str, now: datetime) -> None:
        """Set the token's `last_used_at` to `now`; nothing for an unknown id."""
        ...

    async def record(self, entry: AuditEntry) -> None:
        """Append `entry` to the audit log."""
        ...

    async def list_audit(
        self,
        *,
        actor: str | None = None,
        action: AuditAction | None = None,
        limit: int = 100,
        before: AuditCursor | None = None,
        within: TimeRange | None = None,
    ) -> list[AuditEntry]:
        """Entries newest first (by `at`, then id, both descending), optionally of one actor
        or action or made `within` a window, those after `before` in that order when it is
        given (the next page)."""
        ...

    async def prune_audit(self, before: datetime, limit: int) -> int:
        """Delete up to `limit` audit entries made before `before`, oldest first, in one
        transaction; returns how many."""
        ...


class Repositories(Protocol):
    """The repositories over one database, as a `Store` or a `UnitOfWork` hands them out."""

    @property
    def catalog(self) -> CatalogRepository: ...

    @property
    def claims(self) -> ClaimRepository: ...

    @property
    def runs(self) -> RunRepository: ...

    @property
    def planner(self) -> PlannerRepository: ...

    @property
    def schemas(self) -> SchemaRepository: ...

    @property
    def graph(self) -> GraphRepository: ...

    @property
    def dag(self) -> DagRepository: ...

    @property
    def notifications(self) -> NotificationRepository: ...

    @property
    def workers(self) -> WorkerRepository: ...

    @property
    def access(self) -> AccessRepository: ...

    @property
    def approvals(self) -> ApprovalRepository: ...

    @property
    def vectors(self) -> VectorRepository: ...


class ReadingUnit(Repositories, Protocol):
    """The repositories on one read-only transaction, for a use case that reads several
    things and wants them consistent: `async with store.reading() as tx:`.

    Every read inside the block sees the same committed state (one snapshot), and none of
    them holds up writers: SQLite reads one WAL snapshot without its write lock, PostgreSQL
    runs a READ ONLY transaction at REPEATABLE READ; the memory store holds its lock, so
    writers wait for the block. A write through the unit's repositories raises
    `ReadOnlyUnit` (a bug in the caller) and writes nothing. A driver error raises as the
    repositories' methods do (`StoreUnavailable`, …)."""

    async def __aenter__(self) -> Self:
        """Begin the transaction. Raises `StoreUnavailable` when the store cannot be reached."""
        ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """End the transaction and give the connection back."""
        ...


class UnitOfWork(ReadingUnit, Protocol):
    """The repositories on one transaction, for a use case of several steps (cosmicpython's
    unit of work): `async with uow() as tx:` … `await tx.commit()`.

    Everything the repositories write inside the block is one atomic change: `commit` makes it
    all visible; leaving the block without `commit`, or by an exception, rolls it all back.
    Reads inside the block see the block's own writes. A unit is entered once; concurrent use
    cases each take their own. Inside a unit, call its repositories from the task that entered
    it (the memory store's unit holds the store's lock for that task).

    On SQL it is one connection with one transaction (SQLite takes its write lock up front);
    on memory it is the store's lock, held for the whole unit, and a copy of the state to put
    back on rollback. A driver error raises as the repositories' methods do
    (`StoreUnavailable`, `ConflictError`, …), from the body or from `commit`."""

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Roll back whatever was not committed and give the connection back."""
        ...

    async def commit(self) -> None:
        """Make the unit's writes visible, all at once. Call at most once, as its last step."""
        ...


UnitOfWorkFactory = Callable[[], UnitOfWork]
"""Starts a fresh unit of work on each call (`Store.unit_of_work`): what use cases are given."""

ReadingFactory = Callable[[], ReadingUnit]
"""Starts a fresh read-only unit on each call (`Store.reading`)."""


class Store(Repositories, Protocol):
    """One backend: the repositories over one database, each method its own transaction (the
    workers' hot path), and units of work for use cases that span several."""

    def unit_of_work(self) -> UnitOfWork:
        """A new unit of work on this store, not begun until entered."""
        ...

    def reading(self) -> ReadingUnit:
        """A new read-only unit on this store, not begun until entered."""
        ...

    async def close(self) -> None: ...


class Dispatcher(Protocol):
    async def dispatch(self, request: HttpRequest) -> Response:
        """Make the call. Endpoint failures (timeouts, resets, refused addresses, bad bodies)
        are reported in the `Response`, never raised."""
        ...

    async def close(self) -> None: ...


class Mailer(Protocol):
    """Sends the e-mail of an `email` notification target (`domain.notify_targets`)."""

    async def send(
        self, server: SmtpServer, message: MailMessage, timeout_seconds: float
    ) -> str | None:
        """Send `message` through `server` to its recipients, within `timeout_seconds`; None
        once the server took it, else why not in one line (never a secret). The server's
        failures (refused, silent, unreachable, a refused address) are returned, never raised."""
        ...


SpanValue = str | int | float | bool


class Span(Protocol):
    """A span under way (`Tracer.span`)."""

    @property
    def context(self) -> TraceContext:
        """Its place in the trace: what the `traceparent` of a call made in it carries."""
        ...

    def note(self, **attributes: SpanValue) -> None:
        """Add attributes learnt while the span runs (a call's status code)."""
        ...


class Tracer(Protocol):
    """Where a worker's spans go (decision 0019): nowhere by default, OpenTelemetry when it is
    turned on. Spans are named `cronpilot.<name>` and belong to the trace of the run they
    serve, children of the run's span (`domain.tracing.run_trace`)."""

    def span(
        self, name: SpanName, run: TraceContext, **attributes: SpanValue
    ) -> AbstractContextManager[Span]:
        """A span of `run`'s trace for the duration of the block; its context is new (a new
        span id, random when nothing records it)."""
        ...

    def past_span(
        self,
        name: SpanName,
        run: TraceContext,
        start: datetime,
        end: datetime,
        **attributes: SpanValue,
    ) -> None:
        """A span of `run`'s trace that has already happened: a claim, which learns the runs
        it serves only when it ends."""
        ...


class SecretCipher(Protocol):
    """Encrypts secret header values at rest."""

    def encrypt(self, plaintext: str) -> str: ...

    def decrypt(self, token: str) -> str: ...


class Telemetry(Protocol):
    """What the workers report as they work, for metrics (`adapters.metrics`); `NoTelemetry`
    (`domain.telemetry`) where metrics are off.

    Each method is called on the hot path or beside it: it must return at once, never raise
    and never wait. What it is told may carry ids, URLs and error text, but what it counts by
    is bounded: job and endpoint names, and the enums of the domain."""

    def loop_turned(self, loop: WorkerLoop) -> None:
        """A worker's loop went round once (readiness: the loop is not stuck)."""
        ...

    def claimed(self, count: int, seconds: float) -> None:
        """A claim round trip took `seconds` and brought `count` slots."""
        ...

    def recorded(self, claim: Claim, recorded: Recorded) -> None:
        """The run of `claim` was recorded, with the DAG dependants it skipped."""
        ...

    def lease_lost(self, endpoint: Endpoint) -> None:
        """A run's lease was lost (another worker or the reaper took its endpoint)."""
        ...

    def reaped(self, count: int) -> None:
        """The reaper abandoned `count` runs of dead workers."""
        ...

    def analysed(self, endpoint: Endpoint, session: AnalysisSession) -> None:
        """The planner recorded an analysis session (its tool calls and tokens)."""
        ...

    def passed_quietly(self, endpoint: Endpoint, session: AnalysisSession) -> None:
        """A planner pass proposed nothing and found nothing new: its session was not stored
        (`domain.quiet_passes`), but its tool calls and tokens were spent."""
        ...

    def proposed(
        self, status: ProposalStatus, refused_by: GuardrailRule | None = None, count: int = 1
    ) -> None:
        """`count` proposals were recorded or decided with `status` (applied, held, refused
        by the guardrail `refused_by`, rejected, expired)."""
        ...

    def drifted(self, endpoint: Endpoint, events: int) -> None:
        """Learning the endpoint's output schema recorded `events` changes of shape."""
        ...

    def rule_evaluated(self, endpoint: Endpoint, outcome: RuleOutcome) -> None:
        """The rules planner evaluated one of the endpoint's rules: it did not hold, its action
        was proposed, already stood or was refused, or it could not be evaluated (`error`)."""
        ...

    def notified(self, notification: Notification, outcome: Delivery) -> None:
        """A webhook delivery ended: delivered, to be retried, or given up."""
        ...

    def approval_decided(self, state: ApprovalState) -> None:
        """An approval was approved, rejected or expired (those asked for are counted from
        `recorded`)."""
        ...
