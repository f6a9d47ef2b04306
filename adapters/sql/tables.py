"""The schema: the single source of truth for Alembic (`metadata`) and for the SQL repositories.

Column types are chosen to behave the same on PostgreSQL and SQLite: JSON (JSONB on
PostgreSQL) and `UtcDateTime`, which stores UTC and always reads back aware UTC datetimes.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
    literal_column,
    text,
    true,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.types import TypeDecorator, TypeEngine

ID_LENGTH = 32
SLOT_KEY = "uq_runs_endpoint_slot"
QUEUE_SLOT_KEY = "uq_run_queue_endpoint_slot"
CLAIM_INDEX = "ix_endpoints_claim"

# Named constraints so Alembic's batch mode can recreate SQLite tables without guessing names.
metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)


class UtcDateTime(TypeDecorator[datetime]):
    """Aware datetimes in, aware UTC datetimes out.

    SQLite has no time zone type: values are stored as naive UTC text of fixed width, so
    comparisons and ORDER BY on the text agree with time order.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: cronpilot stores aware UTC only")
        utc = value.astimezone(UTC)
        return utc.replace(tzinfo=None) if dialect.name == "sqlite" else utc

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


def _json() -> TypeEngine[Any]:
    # none_as_null: a Python None is SQL NULL ("no value"), never the JSON literal null.
    return JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")


def _id(name: str, *args: Any, **kwargs: Any) -> Column[str]:
    return Column(name, String(ID_LENGTH), *args, **kwargs)


# One row about the database itself. `key_check` is a token sealed with the secret key that
# sealed the header secrets (never the key): a worker whose key cannot open it has another key.
meta = Table(
    "cronpilot_meta",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("key_check", Text, nullable=False),
    CheckConstraint("id = 1", name="one_row"),
)

jobs = Table(
    "jobs",
    metadata,
    _id("id", primary_key=True),
    Column("name", String(200), nullable=False, unique=True),
    Column("description", Text, nullable=False),
    Column("planner_mode", String(16), nullable=False),
    # The admin's word stands: NULL for the `planner_rejection_cooldown_seconds`.
    Column("rejection_cooldown_seconds", Float, nullable=True),
    # The calls the built-in planner splits, as written (`600/h`); NULL: the declared ones.
    Column("budget", String(32), nullable=True),
    # The job's pause: set while paused (its reason), kept over its endpoints' own.
    Column("pause_reason", Text, nullable=True),
    Column("pause_until", UtcDateTime, nullable=True),
    Column("pause_by", String(200), nullable=True),
)

endpoints = Table(
    "endpoints",
    metadata,
    _id("id", primary_key=True),
    _id("job_id", ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
    Column("name", String(200), nullable=False),
    # Declared spec.
    Column("description", Text, nullable=False),
    Column("url", Text, nullable=False),
    Column("method", String(16), nullable=False),
    Column("headers", _json(), nullable=False),
    Column("body", _json(), nullable=True),
    Column("cron", String(200), nullable=True),
    Column("timezone", String(64), nullable=False),
    Column("interval_seconds", Float, nullable=True),
    Column("min_interval_seconds", Float, nullable=True),
    Column("max_interval_seconds", Float, nullable=True),
    Column("timeout_seconds", Float, nullable=False),
    Column("max_response_bytes", Integer, nullable=False),
    Column("planner_mode", String(16), nullable=True),
    # Runtime state.
    Column("hint_interval_seconds", Float, nullable=True),
    Column("hint_interval_expires_at", UtcDateTime, nullable=True),
    Column("hint_interval_reason", Text, nullable=True),
    Column("hint_oneshot_at", UtcDateTime, nullable=True),
    Column("hint_oneshot_expires_at", UtcDateTime, nullable=True),
    Column("hint_oneshot_reason", Text, nullable=True),
    Column("paused", Boolean, nullable=False),
    Column("pause_until", UtcDateTime, nullable=True),
    Column("pause_reason", Text, nullable=True),
    # Who paused: an actor, `token:NAME` or `cli:USER@HOST`; NULL for cronpilot.
    Column("pause_by", String(200), nullable=True),
    Column("failure_count", Integer, nullable=False),
    Column("last_slot_at", UtcDateTime, nullable=True),
    Column("next_run_at", UtcDateTime, nullable=True),
    Column("next_run_source", String(32), nullable=False),
    Column("lease_owner", String(200), nullable=True),
    Column("lease_until", UtcDateTime, nullable=True),
    # DAG declaration: upstream names, derived dependant names, skip-if-unchanged.
    Column("depends_on", _json(), nullable=False, server_default=text("'[]'")),
    Column("dependants", _json(), nullable=False, server_default=text("'[]'")),
    Column("only_if_changed", Boolean, nullable=False, server_default=false()),
    # Conditional calls (If-None-Match / If-Modified-Since) for a GET endpoint unless off.
    Column("conditional", Boolean, nullable=False, server_default=true()),
    # Conditions (CEL): a dependant's gate on its parents, a response's judge.
    Column("run_if", Text, nullable=True),
    Column("success_when", Text, nullable=True),
    # Failure alerts: webhook URLs, the streak that raises `failing`, auto-pause.
    Column("notify", _json(), nullable=False, server_default=text("'[]'")),
    Column("notify_after", Integer, nullable=False, server_default=text("3")),
    Column("pause_after", Integer, nullable=True),
    # Notification targets: Slack, Teams, PagerDuty, e-mail; secrets sealed.
    Column("notify_targets", _json(), nullable=False, server_default=text("'[]'")),
    # Retries within a slot, and endpoints steering their schedule.
    Column("retry", _json(), nullable=True),
    Column("accept_hints", Boolean, nullable=False, server_default=false()),
    # Graded autonomy: timed proposals on it always wait for review.
    Column("dangerous", Boolean, nullable=False, server_default=false()),
    # What the built-in planner spends its calls on: freshness or age.
    Column("objective", String(16), nullable=False, server_default="freshness"),
    Column("retry_after_at", UtcDateTime, nullable=True),
    Column("hint_interval_source", String(16), nullable=True),
    Column("hint_oneshot_source", String(16), nullable=True),
    # Jitter, catch-up and the floor stamped at apply; `next_slot_at` is the grid
    # slot of the next run when its call (`next_run_at`) is off it.
    Column("jitter_seconds", Float, nullable=True),
    Column("catch_up", String(8), nullable=False, server_default=text("'one'")),
    Column("catch_up_window_seconds", Float, nullable=False, server_default=text("86400")),
    Column("floor_seconds", Float, nullable=False, server_default=text("1")),
    Column("next_slot_at", UtcDateTime, nullable=True),
    # Approval gates: set on a dependant that waits for an admin, at most this long.
    Column("approval_timeout_seconds", Float, nullable=True),
    # Change detection: fields declared not to count as a change, and those the
    # schema learner found changing on every call (clocks, ids).
    Column("change_ignores", _json(), nullable=False, server_default=text("'[]'")),
    Column("volatile_fields", _json(), nullable=False, server_default=text("'[]'")),
    # Response rules: NULL when the endpoint has none, so that the planner's claim
    # tells endpoints with rules without reading JSON.
    Column("rules", _json(), nullable=True),
    # Missed and late runs (`domain.runs.watch`): how long past a due slot, or a run's
    # start past its slot, raises an alert; `late_since` begins the current streak of late runs.
    Column("missed_after_seconds", Float, nullable=True),
    Column("late_after_seconds", Float, nullable=True),
    Column("late_since", UtcDateTime, nullable=True),
    # Values from `${env:…}` / `${file:…}`: where each stood and how it was written, so that
    # export writes the reference back (the value is stored where it belongs, sealed if secret).
    Column("value_references", _json(), nullable=False, server_default=text("'[]'")),
    # Quiet windows (`domain.schedule.quiet`): NULL for an endpoint with none.
    Column("quiet", _json(), nullable=True),
    # The key of the limit its calls count against (`limits`); NULL: none.
    Column("limit_key", String(200), nullable=True),
    # `overlap` (skip, queue_one, allow): slots that come while a call runs; `overrun_since` begins
    # the current streak of calls that outlasted their interval (`domain.schedule.overlap`).
    Column("overlap", String(16), nullable=False, server_default=text("'skip'")),
    Column("overrun_since", UtcDateTime, nullable=True),
    UniqueConstraint("job_id", "name"),
)

# The claim reads only unleased rows in next_run_at order; leased rows stay out of the index.
Index(
    CLAIM_INDEX,
    endpoints.c.next_run_at,
    postgresql_where=endpoints.c.lease_owner.is_(None),
    sqlite_where=endpoints.c.lease_owner.is_(None),
)
# The watch looks for due slots among the endpoints watched for missed runs only.
WATCHED_INDEX = "ix_endpoints_watched"
Index(
    WATCHED_INDEX,
    endpoints.c.next_run_at,
    postgresql_where=endpoints.c.missed_after_seconds.isnot(None),
    sqlite_where=endpoints.c.missed_after_seconds.isnot(None),
)
# A claim counts each limited key's leased rows and looks for its due ones; an unlimited
# fleet leaves this index empty.
LIMITED_INDEX = "ix_endpoints_limited"
Index(
    LIMITED_INDEX,
    endpoints.c.limit_key,
    endpoints.c.next_run_at,
    postgresql_where=endpoints.c.limit_key.isnot(None),
    sqlite_where=endpoints.c.limit_key.isnot(None),
)

# Limits per target (`domain.schedule.limits`): a key's bounds as declared, and what claims record
# on it: the token bucket, the version every claim letting a call go bumps, the hold.
limits = Table(
    "limits",
    metadata,
    Column("key", String(200), primary_key=True),
    Column("concurrency", Integer, nullable=True),
    Column("rate_calls", Integer, nullable=True),
    Column("rate_seconds", Float, nullable=True),
    Column("burst", Integer, nullable=False),
    Column("tokens", Float, nullable=True),
    Column("refilled_at", UtcDateTime, nullable=True),
    Column("version", Integer, nullable=False),
    Column("held", Integer, nullable=False),
    Column("hold_reason", String(16), nullable=True),
    Column("held_at", UtcDateTime, nullable=True),
    Column("open_at", UtcDateTime, nullable=True),
)

# The reaper looks for expired leases among the (few) leased rows.
Index(
    "ix_endpoints_lease_until",
    endpoints.c.lease_until,
    postgresql_where=endpoints.c.lease_owner.isnot(None),
    sqlite_where=endpoints.c.lease_owner.isnot(None),
)


def _run_columns() -> list[Column[Any]]:
    """A run's columns: the history's and the queue's alike, so a run moves from one to the
    other as it is."""
    return [
        _id("id", nullable=False),
        _id("endpoint_id", ForeignKey("endpoints.id", ondelete="CASCADE"), nullable=False),
        _id("job_id", ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
        _id("trace_id", nullable=False),
        _id("parent_trace_id", nullable=True),
        # A DAG dependant's: the trace id of the run that began its DAG run, the W3C trace it
        # sent.
        _id("dag_run_id", nullable=True),
        Column("trigger", String(16), nullable=False),
        Column("schedule_source", String(32), nullable=False),
        Column("status", String(16), nullable=False),
        Column("slot_at", UtcDateTime, nullable=False),
        Column("started_at", UtcDateTime, nullable=False),
        Column("worker_id", String(200), nullable=False),
        Column("attempt", Integer, nullable=False),
        Column("finished_at", UtcDateTime, nullable=True),
        Column("duration_ms", Float, nullable=True),
        Column("status_code", Integer, nullable=True),
        Column("body", _json(), nullable=True),
        Column("body_absence", String(16), nullable=True),
        Column("size_bytes", Integer, nullable=True),
        Column("body_hash", String(128), nullable=True),
        Column("error_kind", String(32), nullable=True),
        Column("error_message", Text, nullable=True),
        Column("attempts", _json(), nullable=True),
        # Runs asked for by hand (manual, backfill): queued until `due_at`, then claimed.
        Column("due_at", UtcDateTime, nullable=True),
        Column("requested_by", String(200), nullable=True),
        # The request the deciding call sent, masked and bounded (`domain.runs.sent_request`).
        Column("request", _json(), nullable=True),
        # Who asked to cancel the run while it ran: the worker holding it cuts it short.
        Column("cancel_requested_by", String(200), nullable=True),
        # A 304 answered a conditional call: status and body are the confirmed answer's.
        Column("not_modified", Boolean, nullable=False, server_default=false()),
        # A run's own lease, under `overlap: allow` (its endpoint stays unleased meanwhile).
        Column("lease_until", UtcDateTime, nullable=True),
    ]


# Runs not finished yet, queued or running: a small table that claims, finishes and cancels
# write, apart from the history that only grows (decision 0047).
run_queue = Table(
    "run_queue",
    metadata,
    *_run_columns(),
    PrimaryKeyConstraint("id", name="pk_run_queue"),
    # A slot runs once, whatever any worker believes: the database refuses a second run (the
    # history's key below, checked before a run is queued: `run_moves.queue_runs`).
    UniqueConstraint("endpoint_id", "slot_at", name=QUEUE_SLOT_KEY),
)
# Claims look for due queued runs among the (few) queued rows.
QUEUED_INDEX = "ix_run_queue_due_at"
IS_QUEUED = run_queue.c.status == literal_column("'queued'")
"""`status = 'queued'` with the value written out, not bound: only then can SQLite (and a
generic PostgreSQL plan) tell that a query's condition implies `QUEUED_INDEX`'s."""
Index(QUEUED_INDEX, run_queue.c.due_at, postgresql_where=IS_QUEUED, sqlite_where=IS_QUEUED)
IS_RUNNING = run_queue.c.status == literal_column("'running'")
# The reaper looks for expired leases among the (few) runs that hold their own.
HOLDS_LEASE = run_queue.c.lease_until.isnot(None)
Index(
    "ix_run_queue_lease_until",
    run_queue.c.lease_until,
    postgresql_where=HOLDS_LEASE,
    sqlite_where=HOLDS_LEASE,
)

# Finished runs, written once (moved from `run_queue`) and only ever deleted by retention. On
# PostgreSQL one partition per UTC day of `slot_at` (`adapters.sql.partitions`), so retention
# drops whole days; its keys hold the partition key, as PostgreSQL requires.
runs = Table(
    "runs",
    metadata,
    *_run_columns(),
    PrimaryKeyConstraint("id", "slot_at", name="pk_runs"),
    # Read backwards, also an endpoint's history newest slot first.
    UniqueConstraint("endpoint_id", "slot_at", name=SLOT_KEY),
    postgresql_partition_by="RANGE (slot_at)",
)
Index("ix_runs_trace_id", runs.c.trace_id)
# `GET /runs` without a filter pages every run newest (slot, id) first (keyset paging): read
# backwards, this index yields a page without sorting the whole table.
NEWEST_RUNS_INDEX = "ix_runs_newest"
Index(NEWEST_RUNS_INDEX, runs.c.slot_at, runs.c.id)

# The planner's bookkeeping per endpoint: what it has seen, when to look again, its backoff and
# its lease (claimed like endpoints, with SKIP LOCKED on PostgreSQL).
planner_state = Table(
    "planner_state",
    metadata,
    _id("endpoint_id", ForeignKey("endpoints.id", ondelete="CASCADE"), primary_key=True),
    Column("seen_slot_at", UtcDateTime, nullable=True),
    Column("seen_failing", Boolean, nullable=False),
    Column("next_analysis_at", UtcDateTime, nullable=True),
    Column("llm_failures", Integer, nullable=False),
    Column("retry_at", UtcDateTime, nullable=True),
    Column("lease_owner", String(200), nullable=True),
    Column("lease_until", UtcDateTime, nullable=True),
    # The rules planner's own: the newest job slot its rules saw, the rule that stands.
    Column("rules_seen_slot_at", UtcDateTime, nullable=True),
    Column("rule_held", Integer, nullable=True),
    # The rule that held first on the latest passes and since when (`for:`).
    Column("rule_holding", Integer, nullable=True),
    Column("rule_holding_since", UtcDateTime, nullable=True),
    # When a pass last finished, stored or quiet: quiet passes leave no session.
    Column("last_analysed_at", UtcDateTime, nullable=True),
)

# A session's tool calls are read and written only with the session: one JSON list, in order.
analysis_sessions = Table(
    "analysis_sessions",
    metadata,
    _id("id", primary_key=True),
    _id("endpoint_id", ForeignKey("endpoints.id", ondelete="CASCADE"), nullable=False),
    _id("job_id", ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
    Column("planner", String(200), nullable=False),
    Column("started_at", UtcDateTime, nullable=False),
    Column("finished_at", UtcDateTime, nullable=False),
    Column("status", String(16), nullable=False),
    Column("reasoning", Text, nullable=False),
    Column("confidence", Float, nullable=True),
    Column("next_analysis_at", UtcDateTime, nullable=True),
    Column("prompt_tokens", Integer, nullable=False),
    Column("completion_tokens", Integer, nullable=False),
    Column("tool_errors", Integer, nullable=False),
    Column("error", Text, nullable=True),
    Column("tool_calls", _json(), nullable=False),
    Column("rule_evaluations", _json(), nullable=False, server_default=text("'[]'")),
)
Index(
    "ix_analysis_sessions_endpoint", analysis_sessions.c.endpoint_id, analysis_sessions.c.started_at
)
# Retention deletes the oldest sessions and `sessions list` pages them all newest first.
Index("ix_analysis_sessions_started", analysis_sessions.c.started_at, analysis_sessions.c.id)

# `session_id` has no foreign key: proposals are written during a session, which is stored when
# it ends (and a proposal made from the CLI has none).
proposals = Table(
    "proposals",
    metadata,
    _id("id", primary_key=True),
    _id("endpoint_id", ForeignKey("endpoints.id", ondelete="CASCADE"), nullable=False),
    _id("job_id", ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
    _id("session_id", nullable=True),
    Column("kind", String(16), nullable=False),
    Column("reason", Text, nullable=False),
    Column("proposed_by", String(200), nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("status", String(16), nullable=False),
    Column("interval_seconds", Float, nullable=True),
    Column("at", UtcDateTime, nullable=True),
    Column("ttl_seconds", Float, nullable=True),
    Column("expires_at", UtcDateTime, nullable=True),
    Column("decided_by", String(200), nullable=True),
    Column("decided_at", UtcDateTime, nullable=True),
    Column("outcome", Text, nullable=True),
    Column("confidence", Float, nullable=True),
    # The newer proposal that superseded a pending one; no foreign key, so that
    # retention may drop either first.
    _id("superseded_by", nullable=True),
)
# The rate guardrail counts an endpoint's recent decisions; listings go newest first.
Index("ix_proposals_endpoint", proposals.c.endpoint_id, proposals.c.decided_at)
Index("ix_proposals_status", proposals.c.status, proposals.c.created_at)

# Graded autonomy: one row per admin decision on a held proposal of a job, with the
# threshold after it (`domain.planning.autonomy.AutonomyStep`); the newest row is the job's
# threshold.
autonomy_steps = Table(
    "autonomy_steps",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    _id("job_id", ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
    Column("at", UtcDateTime, nullable=False),
    Column("threshold", Float, nullable=False),
    Column("approvals", Integer, nullable=False),
    Column("rejections", Integer, nullable=False),
    Column("note", Text, nullable=False),
    _id("proposal_id", nullable=True),
)
Index("ix_autonomy_steps_job", autonomy_steps.c.job_id, autonomy_steps.c.id)

# --- output schemas, the tool graph, DAG runs ---------------------------------------------

output_schemas = Table(
    "output_schemas",
    metadata,
    _id("endpoint_id", ForeignKey("endpoints.id", ondelete="CASCADE"), primary_key=True),
    Column("shape", _json(), nullable=False),
    Column("through_slot", UtcDateTime, nullable=True),
    Column("version", Integer, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
)

schema_drift = Table(
    "schema_drift",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    _id("endpoint_id", ForeignKey("endpoints.id", ondelete="CASCADE"), nullable=False),
    # No foreign key: retention may prune the run while its drift stays worth knowing.
    _id("run_id", nullable=False),
    Column("at", UtcDateTime, nullable=False),
    Column("changes", _json(), nullable=False),
)
Index("ix_schema_drift_endpoint", schema_drift.c.endpoint_id, schema_drift.c.at)

# Nodes are refs (`job` or `job/endpoint`): edges outlive renames as history, not as links.
graph_edges = Table(
    "graph_edges",
    metadata,
    Column("from_node", String(401), primary_key=True),
    Column("to_node", String(401), primary_key=True),
    Column("edge_type", String(16), primary_key=True),
    Column("source", String(16), nullable=False),
    Column("count", Integer, nullable=False),
    Column("confidence", Float, nullable=True),
    Column("coverage", String(16), nullable=True),
    Column("updated_at", UtcDateTime, nullable=False),
)
Index("ix_graph_edges_to_node", graph_edges.c.to_node)

# The search index's embeddings: float32 bytes (a 256-dimension vector is 1 KiB, and ten
# thousand of them load in one read without decoding JSON).
endpoint_vectors = Table(
    "endpoint_vectors",
    metadata,
    _id("endpoint_id", ForeignKey("endpoints.id", ondelete="CASCADE"), primary_key=True),
    Column("model", String(200), primary_key=True),
    Column("digest", String(64), nullable=False),
    Column("vector", LargeBinary, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
)

dag_waits = Table(
    "dag_waits",
    metadata,
    _id("dag_run_id", primary_key=True),
    _id("endpoint_id", ForeignKey("endpoints.id", ondelete="CASCADE"), primary_key=True),
    Column("root", String(200), nullable=False),
    Column("arrived", _json(), nullable=False),
    Column("ready", Boolean, nullable=False),
    _id("parent_trace_id", nullable=True),
    Column("created_at", UtcDateTime, nullable=False),
)

# Approval gates: a dependant's wait (`dag_waits`) held for an admin's decision.
# `parent_run_id` has no foreign key: retention may prune that run while the approval waits.
approvals = Table(
    "approvals",
    metadata,
    _id("id", primary_key=True),
    _id("dag_run_id", nullable=False),
    _id("parent_run_id", nullable=False),
    _id("endpoint_id", ForeignKey("endpoints.id", ondelete="CASCADE"), nullable=False),
    _id("job_id", ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
    Column("requested_at", UtcDateTime, nullable=False),
    Column("expires_at", UtcDateTime, nullable=False),
    Column("state", String(16), nullable=False),
    Column("decided_by", String(200), nullable=True),
    Column("decided_at", UtcDateTime, nullable=True),
    Column("reason", Text, nullable=True),
)
# Expiry and the one-pending-per-endpoint rule read the (few) pending rows; listings go newest
# first.
IS_PENDING_APPROVAL = approvals.c.state == literal_column("'pending'")
Index(
    "ix_approvals_pending",
    approvals.c.expires_at,
    postgresql_where=IS_PENDING_APPROVAL,
    sqlite_where=IS_PENDING_APPROVAL,
)
Index("ix_approvals_requested", approvals.c.requested_at, approvals.c.id)

# The alerts outbox: written in the transaction of the run (or proposal) that raised the event,
# delivered by any scheduler worker's notifier, which leases rows as endpoints are leased.
notifications = Table(
    "notifications",
    metadata,
    _id("id", primary_key=True),
    _id("endpoint_id", ForeignKey("endpoints.id", ondelete="CASCADE"), nullable=False),
    _id("job_id", ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
    Column("event", String(32), nullable=False),
    Column("url", Text, nullable=False),
    Column("payload", _json(), nullable=False),
    Column("status", String(16), nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("next_attempt_at", UtcDateTime, nullable=False),
    Column("last_error", Text, nullable=True),
    Column("created_at", UtcDateTime, nullable=False),
    Column("delivered_at", UtcDateTime, nullable=True),
    Column("lease_owner", String(200), nullable=True),
    Column("lease_until", UtcDateTime, nullable=True),
    # The `notify.targets` entry of the row, secrets sealed; NULL for a webhook URL.
    Column("target", _json(), nullable=True),
    # The episode and destination of the row (`domain.alerts.alerts.episode_key`): delivered in
    # order.
    Column("episode_key", Text, nullable=True),
    # The DAG upstream that blocked the endpoint: the row is `held` (`domain.alerts.alert_holding`).
    Column("held_by", Text, nullable=True),
)
# A row waits while an earlier one of its episode is pending (`domain.alerts.alerts.precedes`).
Index(
    "ix_notifications_episode",
    notifications.c.episode_key,
    postgresql_where=notifications.c.status == "pending",
    sqlite_where=notifications.c.status == "pending",
)
# The notifier reads only pending rows in next-attempt order; delivered and failed ones stay out.
Index(
    "ix_notifications_due",
    notifications.c.next_attempt_at,
    postgresql_where=notifications.c.status == "pending",
    sqlite_where=notifications.c.status == "pending",
)
Index("ix_notifications_endpoint", notifications.c.endpoint_id, notifications.c.created_at)
# Retention deletes the oldest delivered rows; `notifications list` pages them all newest first.
Index("ix_notifications_created", notifications.c.created_at, notifications.c.id)

# Alert episodes (`domain.runs.watch`): one per subject (an endpoint's id, or `workers`),
# kind and start, so that workers noticing one at once record it once, and at most one open
# per subject and kind.
alert_episodes = Table(
    "alert_episodes",
    metadata,
    _id("id", primary_key=True),
    _id("subject", nullable=False),
    _id("endpoint_id", ForeignKey("endpoints.id", ondelete="CASCADE"), nullable=True),
    Column("kind", String(16), nullable=False),
    Column("started_at", UtcDateTime, nullable=False),
    Column("opened_at", UtcDateTime, nullable=False),
    Column("recovered_at", UtcDateTime, nullable=True),
    UniqueConstraint("subject", "kind", "started_at"),
)
OPEN_EPISODE = "ix_alert_episodes_open"
Index(
    OPEN_EPISODE,
    alert_episodes.c.subject,
    alert_episodes.c.kind,
    unique=True,
    postgresql_where=alert_episodes.c.recovered_at.is_(None),
    sqlite_where=alert_episodes.c.recovered_at.is_(None),
)
# Retention deletes the oldest ended episodes.
Index("ix_alert_episodes_opened", alert_episodes.c.opened_at, alert_episodes.c.id)

# The workers registry: one row per scheduler worker, its `last_seen` moved on by a heartbeat.
workers = Table(
    "workers",
    metadata,
    Column("id", String(200), primary_key=True),
    Column("host", String(255), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("version", String(64), nullable=False),
    Column("started_at", UtcDateTime, nullable=False),
    Column("last_seen", UtcDateTime, nullable=False),
)
Index("ix_workers_last_seen", workers.c.last_seen)
# `workers list` counts each worker's recent runs without a scan of every run.
Index("ix_runs_worker", runs.c.worker_id, runs.c.started_at)
# --- access control ----------------------------------------------------------------------

# The secret is never stored: its SHA-256 (`domain.access.tokens`), looked up by equality.
api_tokens = Table(
    "api_tokens",
    metadata,
    _id("id", primary_key=True),
    Column("name", String(64), nullable=False),
    Column("scope", String(16), nullable=False),
    Column("secret_hash", String(64), nullable=False, unique=True),
    Column("created_at", UtcDateTime, nullable=False),
    Column("created_by", String(200), nullable=False),
    Column("revoked_at", UtcDateTime, nullable=True),
    Column("revoked_by", String(200), nullable=True),
    Column("last_used_at", UtcDateTime, nullable=True),
    Column("expires_at", UtcDateTime, nullable=True),
    # A JSON list of job names; NULL: every job.
    Column("jobs", _json(), nullable=True),
    # The secret a rotation replaced, which works until `previous_until`.
    Column("previous_hash", String(64), nullable=True, unique=True),
    Column("previous_until", UtcDateTime, nullable=True),
)
# One live token per name; revoked tokens keep theirs as history.
LIVE_TOKEN_NAME = "uq_api_tokens_live_name"
Index(
    LIVE_TOKEN_NAME,
    api_tokens.c.name,
    unique=True,
    postgresql_where=api_tokens.c.revoked_at.is_(None),
    sqlite_where=api_tokens.c.revoked_at.is_(None),
)

# A console browser signed in with a token: the cookie holds a random id, this its SHA-256.
# Every request checks the token too: a revoked or expired token opens none of its sessions.
console_sessions = Table(
    "console_sessions",
    metadata,
    Column("id_hash", String(64), primary_key=True),
    _id("token_id", ForeignKey("api_tokens.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("created_at", UtcDateTime, nullable=False),
    Column("expires_at", UtcDateTime, nullable=False),
    # SHA-256 of the token's secret that opened it: rotation ends it with that secret's grace.
    Column("secret_hash", String(64), nullable=False),
)

# No foreign keys: the log outlives what it names (a deleted endpoint, a pruned proposal).
audit_log = Table(
    "audit_log",
    metadata,
    _id("id", primary_key=True),
    Column("at", UtcDateTime, nullable=False),
    Column("actor", String(200), nullable=False),
    Column("action", String(32), nullable=False),
    Column("target", Text, nullable=False),
    Column("detail", Text, nullable=False),
)
# Read newest first, page by page, all of it or one actor's.
Index("ix_audit_log_at", audit_log.c.at, audit_log.c.id)
Index("ix_audit_log_actor", audit_log.c.actor, audit_log.c.at)
