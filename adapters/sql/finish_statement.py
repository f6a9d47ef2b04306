"""A batch of finishes in one PostgreSQL statement: the common case of `finishes.finish_many`.

A claim made on PostgreSQL carries the version of its endpoint's row as the claim left it
(`xmin`, which every UPDATE of the row changes) and when its run started (`Claim.stored`).
While the row keeps that version nothing has written it since (no pause, hint, apply, lease
extension or reap), so the claim's endpoint is the stored one and `domain.runs.settling.settle`
decides the finish without reading it again. One statement then, in one round trip and one
implicit transaction, locks the batch's rows still at their versions and leased to the
finishing worker (in id order, as every writer locks), moves those of their runs still `running`
from the queue to the history as finished (decision 0047), and writes those endpoints, the batch
passed as arrays (one per column) and the statement prepared once on each connection (asyncpg's
statement cache). Raw asyncpg, not SQLAlchemy: decision 0046.

What the statement cannot take goes the general way, which reads under lock and decides again:
a finish whose row changed, whose lease or run is gone, a run that holds its own lease
(`overlap: allow`: its claim wrote the row again, so it carries no version), a DAG parent
(its dependants are started in the same transaction), a finish that raises notifications
(their targets are sealed in the row) or records skipped slots (`domain.schedule.overlap`), or
two finishes of one endpoint in a batch.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

import orjson
from sqlalchemy import Column, Label, literal_column
from sqlalchemy.dialects import postgresql

from cronpilot.adapters.sql.rows import STATE_COLUMNS, run_values, state_values
from cronpilot.adapters.sql.tables import endpoints, runs
from cronpilot.domain.model import Finish, RunStatus
from cronpilot.domain.runs.settling import Settled, settle
from cronpilot.domain.runs.transitions import started_run

ROW_VERSION: Label[str] = literal_column("endpoints.xmin::text").label("row_version")
"""The version of an endpoint's row (PostgreSQL's `xmin`: the transaction that wrote it)."""

FINISHED_COLUMNS = (
    "status",
    "started_at",
    "finished_at",
    "duration_ms",
    "status_code",
    "body",
    "body_absence",
    "size_bytes",
    "body_hash",
    "error_kind",
    "error_message",
    "attempt",
    "attempts",
    "request",
    "not_modified",
)
"""The run columns `finished_run` changes."""

_KEYS = ("run_id", "endpoint_id", "worker_id", "version")


@functools.cache
def _columns() -> tuple[tuple[tuple[str, bool], ...], tuple[str, ...]]:
    """The run columns written (name, whether JSON) and the endpoint's state columns."""
    written = tuple((name, _pg_type(runs.c[name]) == "JSONB") for name in FINISHED_COLUMNS)
    return written, tuple(STATE_COLUMNS)


def _pg_type(column: Column[Any]) -> str:
    return str(column.type.compile(dialect=postgresql.dialect()))  # type: ignore[no-untyped-call]


@functools.cache
def statement() -> str:
    """The statement, written once from the tables' columns and their PostgreSQL types."""
    run_columns = [runs.c[name] for name in FINISHED_COLUMNS]
    state_columns = [endpoints.c[name] for name in STATE_COLUMNS]
    names = [*_KEYS, *(f"r_{c.name}" for c in run_columns), *(f"e_{c.name}" for c in state_columns)]
    types = ["text"] * len(_KEYS) + [_pg_type(c) for c in (*run_columns, *state_columns)]
    arrays = ", ".join(f"${n}::{kind}[]" for n, kind in enumerate(types, 1))
    history = ", ".join(c.name for c in runs.c)
    moved = ", ".join(
        f"b.r_{c.name}" if c.name in FINISHED_COLUMNS else f"moved.{c.name}" for c in runs.c
    )
    state_sets = ", ".join(f"{c.name} = b.e_{c.name}" for c in state_columns)
    return f"""
WITH b AS (SELECT * FROM unnest({arrays}) AS b({", ".join(names)})),
fenced AS (
    SELECT endpoints.id FROM endpoints JOIN b ON b.endpoint_id = endpoints.id
    WHERE endpoints.lease_owner = b.worker_id AND endpoints.xmin::text = b.version
    ORDER BY endpoints.id FOR UPDATE OF endpoints
),
moved AS (
    DELETE FROM run_queue USING b JOIN fenced ON fenced.id = b.endpoint_id
    WHERE run_queue.id = b.run_id AND run_queue.status = '{RunStatus.RUNNING.value}'
    RETURNING run_queue.*
),
kept AS (
    INSERT INTO runs ({history}) SELECT {moved} FROM moved JOIN b ON b.run_id = moved.id
    ON CONFLICT (endpoint_id, slot_at) DO NOTHING
),
ended AS (
    UPDATE endpoints SET {state_sets} FROM b JOIN moved ON moved.id = b.run_id
    WHERE endpoints.id = b.endpoint_id
)
SELECT id FROM moved"""


def settled_alone(batch: Sequence[Finish]) -> dict[int, Settled]:
    """The finishes of `batch` (by position) that the statement can take, settled from their
    claims' endpoints (module note)."""
    per_endpoint = Counter(item.claim.endpoint.id for item in batch)
    taken: dict[int, Settled] = {}
    for n, item in enumerate(batch):
        claim = item.claim
        if (
            claim.stored is None
            or claim.endpoint.spec.dependants
            or per_endpoint[claim.endpoint.id] > 1
        ):
            continue
        running = started_run(claim, item.worker_id, claim.stored.run_started_at)
        one = settle(claim.endpoint, running, item.response, item.now)
        if not one.raised and not one.skipped:
            taken[n] = one
    return taken


async def write_settled(
    driver: Any, batch: Sequence[Finish], settled: dict[int, Settled]
) -> set[int]:
    """Write `settled` (positions in `batch`) in one statement on asyncpg's connection
    `driver` (`Database.driver`); the positions it recorded."""
    done = await driver.fetch(statement(), *arguments(batch, settled))
    recorded = {record["id"] for record in done}
    return {n for n in settled if settled[n].run.id in recorded}


class _AsText(str):
    """JSON that is text already."""


def _json_text(value: object) -> str | None:
    if value is None or isinstance(value, _AsText):
        return value
    try:
        # A run's attempts and request (and a body without its text): made here of strings,
        # small integers and finite numbers, which orjson writes as `json` does, in a tenth of
        # the time (decision 0053). What it refuses (a lone surrogate, an integer past 64
        # bits, a key that is no string) goes through `json`.
        return orjson.dumps(value).decode()
    except TypeError:
        return json.dumps(value)


def arguments(batch: Sequence[Finish], settled: dict[int, Settled]) -> list[list[Any]]:
    """The statement's arrays, one per column, for `settled` (positions in `batch`)."""
    run_columns, state_columns = _columns()
    positions = sorted(settled)
    ones = [settled[n] for n in positions]
    stored = [batch[n].claim.stored for n in positions]
    written = [run_values(one.run) for one in ones]
    for values, n in zip(written, positions, strict=True):
        response = batch[n].response
        body = values["body"]
        if body is not None and body is response.body and response.body_text is not None:
            # The body as it came, written as is: decoded once, never encoded again.
            values["body"] = _AsText(response.body_text)
    states = [state_values(one.endpoint) for one in ones]
    return [
        [one.run.id for one in ones],
        [one.endpoint.id for one in ones],
        [batch[n].worker_id for n in positions],
        [None if claim is None else claim.version for claim in stored],
        # JSON goes as text (the driver's codec for JSONB takes text); None stays NULL.
        *(
            [_json_text(run[name]) for run in written]
            if is_json
            else [run[name] for run in written]
            for name, is_json in run_columns
        ),
        *([state[name] for state in states] for name in state_columns),
    ]
