"""Use cases that learn an endpoint's output schema from its stored runs: merge what is new
(`learn_schema`) or rebuild from every stored run (`rebuild_schema`). Each attempt reads the
schema and the runs in a read-only unit, merges, then saves at the version read in a short unit
of work: run bodies are read without holding SQLite's only write lock, and another writer
saving first (the version compare-and-swap) sends it round again."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from cronpilot.domain.errors import ConflictError
from cronpilot.domain.graph.change_detection import volatile_fields
from cronpilot.domain.graph.outputs import DriftEvent, OutputSchema, learn
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.model import Endpoint, Run
from cronpilot.domain.ports import ReadingFactory, Repositories, UnitOfWorkFactory

log = logging.getLogger(__name__)

LEARN_BATCH = 200
"""Most runs read per learning step. An endpoint further behind learns from its newest runs
only; `rebuild_schema` reads every stored run."""
SAVE_ATTEMPTS = 3


@dataclass(frozen=True, slots=True)
class Learnt:
    schema: OutputSchema
    reshaped: bool
    """The schema got its first body or changed shape: the job's provides edges are stale."""
    drift_events: int = 0
    """Changes of shape recorded by this step."""


async def learn_schema(
    uow: UnitOfWorkFactory, reading: ReadingFactory, endpoint: Endpoint, now: datetime
) -> Learnt:
    """Merge the endpoint's runs stored since its schema's watermark (at most `LEARN_BATCH`,
    the newest). Gives up quietly, nothing saved, when other writers win `SAVE_ATTEMPTS` times:
    the next learning catches up from the watermark."""
    schema = OutputSchema(endpoint.id)
    for _ in range(SAVE_ATTEMPTS):
        async with reading() as read:
            schema = await read.schemas.get_output_schema(endpoint.id) or OutputSchema(endpoint.id)
            fresh = await _unlearnt(read, endpoint.id, schema.through_slot)
        if not fresh:
            return Learnt(schema, reshaped=False)
        first = schema.observations == 0
        drift = learn(schema, fresh, now)
        if await save_learnt(uow, endpoint, schema, drift, now):
            return Learnt(schema, reshaped=bool(drift) or first, drift_events=len(drift))
    return Learnt(schema, reshaped=False)


async def save_learnt(
    uow: UnitOfWorkFactory,
    endpoint: Endpoint,
    schema: OutputSchema,
    drift: Sequence[DriftEvent],
    now: datetime,
) -> bool:
    """Save `schema` (merged by the caller) with its `drift`, at the version it was read or
    last saved at, and the fields it finds volatile; False, nothing saved, when another writer
    saved it since."""
    async with uow() as tx:
        if not await tx.schemas.save_output_schema(schema, drift, now, rebuilt=False):
            return False
        await _note_volatile(tx, endpoint, schema)
        await tx.commit()
    for event in drift:
        log.info(
            "%s changed shape: %s",
            endpoint.ref,
            "; ".join(event.changes),
            extra=log_extra("schema_drift", endpoint_id=endpoint.id),
        )
    return True


async def _note_volatile(tx: Repositories, endpoint: Endpoint, schema: OutputSchema) -> None:
    """Record the fields the schema now finds volatile, when they differ from the endpoint's
    (as it was claimed: a stale copy costs one write more, never a wrong set)."""
    found = volatile_fields(schema.root)
    if found != endpoint.volatile_fields:
        await tx.catalog.set_volatile_fields(endpoint.id, found)
        if found:
            log.info(
                "%s: fields that change on every call, left out of change detection: %s",
                endpoint.ref,
                ", ".join(found),
                extra=log_extra("volatile_fields", endpoint_id=endpoint.id),
            )


async def _unlearnt(
    repositories: Repositories, endpoint_id: str, through: datetime | None
) -> list[Run]:
    """The runs after `through`, oldest first, at most `LEARN_BATCH`. Read newest first in
    pages of 1, 2, 4, … runs (bodies are up to 100 KB each): the usual case, one new run,
    costs two short reads instead of a whole batch. Only slots from `through` on are read: on
    PostgreSQL only the days since, however long the history."""
    fresh: list[Run] = []
    offset, size = 0, 1
    while offset < LEARN_BATCH:
        page = await repositories.runs.list_runs(endpoint_id, size, offset, since=through)
        newer = [run for run in page if through is None or run.slot_at > through]
        fresh += newer
        if len(newer) < size:
            break
        offset += size
        size = min(size * 2, LEARN_BATCH - offset)
    return list(reversed(fresh))


async def rebuild_schema(
    uow: UnitOfWorkFactory, reading: ReadingFactory, endpoint: Endpoint, now: datetime
) -> OutputSchema:
    """Rebuild the endpoint's schema and drift history from every stored run; the job's
    provides edges are stale afterwards. Raises `ConflictError` when other writers win
    `SAVE_ATTEMPTS` times."""
    for _ in range(SAVE_ATTEMPTS):
        async with reading() as read:
            runs: list[Run] = []
            while page := await read.runs.list_runs(
                endpoint.id, limit=LEARN_BATCH, offset=len(runs)
            ):
                runs.extend(page)
            stored = await read.schemas.get_output_schema(endpoint.id)
        schema = OutputSchema(endpoint.id, version=stored.version if stored else 0)
        drift = learn(schema, reversed(runs), now)
        async with uow() as tx:
            if await tx.schemas.save_output_schema(schema, drift, now, rebuilt=True):
                await _note_volatile(tx, endpoint, schema)
                await tx.commit()
                return schema
    raise ConflictError(f"the schema of {endpoint.ref} changed while it was rebuilt")
