"""One exception root; every subclass carries the data a caller needs to explain it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from cronpilot.domain.access.secrets import mask_url
from cronpilot.domain.runs.excerpt import excerpt


class CronpilotError(Exception):
    """Root of every error cronpilot raises on purpose."""


class InvalidSchedule(CronpilotError):
    """A baseline, clamp or hint that cannot be scheduled."""

    def __init__(self, expr: str, reason: str) -> None:
        super().__init__(f"invalid schedule {excerpt(repr(expr))}: {reason}")
        self.expr = expr
        self.reason = reason


class InvalidConfig(CronpilotError):
    """A configuration document that cannot be applied; `where` names file/job/endpoint/field."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where}: {reason}")
        self.where = where
        self.reason = reason


class UnsafeURL(CronpilotError):
    """A URL whose scheme or resolved address is not allowed."""

    def __init__(self, url: str, reason: str) -> None:
        # Masked before it is cut: a cut through its credentials would hide them from masking.
        super().__init__(f"refused URL {excerpt(repr(mask_url(url)))}: {reason}")
        self.url = url
        self.reason = reason


class NotFound(CronpilotError):
    """Base for lookups that found nothing."""


class RefNotFound(NotFound):
    """Nothing of its `kind` answers to `ref`: `no job 'etl'`."""

    kind: ClassVar[str]

    def __init__(self, ref: str) -> None:
        super().__init__(f"no {self.kind} {excerpt(repr(ref))}")
        self.ref = ref


class JobNotFound(RefNotFound):
    kind = "job"


class EndpointNotFound(RefNotFound):
    kind = "endpoint"


class RunNotFound(RefNotFound):
    kind = "run"


class PathNotFound(NotFound):
    """No chain of edges leads from one node of the tool graph to the other."""

    def __init__(self, source: str, target: str) -> None:
        super().__init__(f"no path from {excerpt(source)} to {excerpt(target)}")


class AmbiguousId(CronpilotError):
    """An id prefix that more than one id starts with (`domain.ids`): a user's mistake, told
    with the ids it could mean."""

    def __init__(self, kind: str, prefix: str, candidates: Sequence[str], *, more: bool) -> None:
        named = ", ".join(candidates) + (", …" if more else "")
        super().__init__(
            f"{kind} id prefix {excerpt(repr(prefix))} is ambiguous: {named}; give more characters"
        )
        self.kind = kind
        self.prefix = prefix
        self.candidates = list(candidates)


class SlotAlreadyRun(CronpilotError):
    """The (endpoint, slot) pair already has a run: the database refused a second one."""

    def __init__(self, endpoint_id: str, slot_at: object) -> None:
        super().__init__(f"endpoint {endpoint_id} already has a run for slot {slot_at}")
        self.endpoint_id = endpoint_id
        self.slot_at = slot_at


class LeaseLost(CronpilotError):
    """The worker no longer holds the lease it claimed; its result must not be applied."""

    def __init__(self, endpoint_id: str, worker_id: str) -> None:
        super().__init__(f"worker {worker_id} lost the lease on endpoint {endpoint_id}")
        self.endpoint_id = endpoint_id
        self.worker_id = worker_id


class ConflictError(CronpilotError):
    """The database refused a change that conflicts with rows written at the same time (two
    `apply`s creating the same job); running the command again resolves it."""

    def __init__(self, detail: str) -> None:
        super().__init__(
            f"the change conflicts with one made at the same time ({detail}); run the command again"
        )
        self.detail = detail


class ValueRejected(CronpilotError):
    """The database refused a value it cannot hold (text too long, a number out of range, JSON
    it does not accept): retrying the same change fails the same way."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"the database refused a value: {detail}")
        self.detail = detail


class StoreUnavailable(CronpilotError):
    """The database could not be reached or answered with an unexpected driver error."""


class DatabaseUnusable(StoreUnavailable):
    """A database that no wait will make work: a SQLite file whose folder is missing, that
    does not exist or is not a database, a schema not migrated to this build's. A worker that
    waits for an unreachable database stops on this one."""


class ReadOnlyUnit(CronpilotError):
    """A write inside a read-only unit (`Store.reading`): a bug in the caller, refused before
    anything is written."""

    def __init__(self) -> None:
        super().__init__("a read-only unit of work cannot write; use Store.unit_of_work")


class ProposalNotFound(RefNotFound):
    kind = "proposal"


class NotificationNotFound(RefNotFound):
    kind = "notification"


class SessionNotFound(RefNotFound):
    kind = "analysis session"


class RunFinished(CronpilotError):
    """Only a queued or running run can be cancelled: this one has ended (nothing changed)."""

    def __init__(self, run_id: str, status: str) -> None:
        super().__init__(f"run {run_id} has finished ({status}): nothing to cancel")
        self.run_id = run_id
        self.status = status


class ProposalNotPending(CronpilotError):
    """Only a pending proposal can be approved, rejected or expired."""

    def __init__(self, proposal_id: str, status: str, superseded_by: str | None = None) -> None:
        by = f" by proposal {superseded_by}" if superseded_by else ""
        super().__init__(f"proposal {proposal_id} is {status}{by}, not pending")
        self.proposal_id = proposal_id
        self.status = status
        self.superseded_by = superseded_by


class ApprovalNotFound(RefNotFound):
    kind = "approval"


class ApprovalNotPending(CronpilotError):
    """Only a pending approval can be approved, rejected or expired."""

    def __init__(self, approval_id: str, state: str) -> None:
        super().__init__(f"approval {approval_id} is {state}, not pending")
        self.approval_id = approval_id
        self.state = state


class AnalysisBusy(CronpilotError):
    """Another planner worker is analysing the endpoint right now."""

    def __init__(self, ref: str, owner: str) -> None:
        super().__init__(f"endpoint {ref} is being analysed by {owner}; try again shortly")
        self.ref = ref
        self.owner = owner


class LlmUnavailable(CronpilotError):
    """The LLM could not answer (after retries): rate limits, server errors, timeouts, or an
    answer that is not a chat completion. Scheduling is unaffected; the planner backs off."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"the LLM is unavailable: {reason}")
        self.reason = reason


class InvalidQuery(CronpilotError):
    """A search query that cannot be searched for: empty, too long, or in a script the index
    does not read."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"invalid search query: {reason}")
        self.reason = reason


class EmbedderUnavailable(CronpilotError):
    """No embedding model could be loaded or reached: search goes on without its semantic leg."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"no embedding model: {reason}")
        self.reason = reason


class TemplateUnfilled(CronpilotError):
    """A request placeholder that the upstream responses at hand cannot fill."""

    def __init__(self, placeholder: str, reason: str) -> None:
        super().__init__(f"template {placeholder}: {reason}")
        self.placeholder = placeholder
        self.reason = reason


class InvalidDependency(CronpilotError):
    """A job's declared dependencies or templates that cannot run: `index` is the endpoint's
    position in the job, `field` the field at fault (`depends_on`, `url`, `body`, …)."""

    def __init__(self, index: int, field: str, reason: str) -> None:
        super().__init__(reason)
        self.index = index
        self.field = field
        self.reason = reason


class InvalidRunRequest(CronpilotError):
    """A run asked for by hand (`run`, `backfill`) that cannot be made as asked: nothing was
    queued. `ref` names the endpoint."""

    def __init__(self, ref: str, reason: str) -> None:
        super().__init__(f"{ref}: {reason}")
        self.ref = ref
        self.reason = reason


class TokenNotFound(RefNotFound):
    """No live API token has that name or id."""

    kind = "live token"


class InvalidTokenName(CronpilotError):
    """A name a new token cannot have: malformed, or held by a live token."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"token name {excerpt(repr(name))} {reason}")
        self.name = name
        self.reason = reason


class InvalidCursor(CronpilotError):
    """A paging cursor that no list handed out (mangled, or from another version)."""

    def __init__(self, token: str) -> None:
        super().__init__(f"invalid cursor {excerpt(repr(token))}: pass the next_cursor a list gave")
        self.token = token


class InvalidTimeRange(CronpilotError):
    """A `since` or `until` that is neither a time nor a duration, or a window that ends
    before it begins."""

    def __init__(self, bound: str, value: str, reason: str) -> None:
        super().__init__(f"{bound} {excerpt(repr(value))} {reason}")
        self.bound = bound
        self.value = value
        self.reason = reason


class StillDependedOn(CronpilotError):
    """An endpoint that others declare in their `depends_on`: deleting it alone would leave
    them waiting for an upstream that no longer exists."""

    def __init__(self, ref: str, dependants: list[str]) -> None:
        super().__init__(
            f"cannot delete {ref}: {', '.join(dependants)} depend on it; delete or re-declare"
            " them first, or delete the whole job"
        )
        self.ref = ref
        self.dependants = dependants


class PreconditionFailed(CronpilotError):
    """A write made against a version of an endpoint that has changed since (`If-Match`)."""

    def __init__(self, ref: str) -> None:
        super().__init__(f"{ref} has changed since it was read; read it again and retry")
        self.ref = ref


class TokenExpired(CronpilotError):
    """A secret of a token whose expiry, or whose replaced secret's grace, has passed."""

    def __init__(self, name: str, at: str, *, rotated: bool = False) -> None:
        what = "secret of token" if rotated else "token"
        ended = "stopped working" if rotated else "expired"
        super().__init__(f"{what} {excerpt(repr(name))} {ended} at {at}")
        self.name = name
        self.at = at


class InvalidTokenTerms(CronpilotError):
    """An expiry, a grace or a job list a token cannot be given."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"token {excerpt(repr(name))}: {reason}")
        self.name = name
        self.reason = reason


class OutOfReach(CronpilotError):
    """A job-limited token asked for what spans every job (`Principal.check_every_job`)."""

    def __init__(self, actor: str, reason: str) -> None:
        super().__init__(f"{actor} {reason}")
        self.actor = actor
        self.reason = reason
