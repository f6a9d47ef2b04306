"""The search index's texts and vectors: what is indexed of each endpoint, and its embedding
kept in step with it. `refresh_vectors` embeds only the endpoints whose text changed since
their vector was made (a new endpoint, a new description, a schema that learnt a field), so
the learner and `apply` can call it after every change."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit

from cronpilot.domain.model import Endpoint
from cronpilot.domain.ports import (
    Embedder,
    ReadingFactory,
    Repositories,
    StoredVector,
    UnitOfWorkFactory,
)
from cronpilot.domain.provides import output_fields
from cronpilot.domain.search import EndpointText, endpoint_text
from cronpilot.domain.templates import input_fields


@dataclass(frozen=True, slots=True)
class Indexed:
    endpoint: Endpoint
    text: EndpointText


async def indexed_endpoints(read: Repositories, job: str | None = None) -> list[Indexed]:
    """Every endpoint (of `job` when given; raises `JobNotFound`) with its indexed text."""
    jobs = [await read.catalog.get_job(job)] if job else await read.catalog.list_jobs()
    described = {j.name: j.description for j in jobs}
    endpoints = [e for e in await read.catalog.list_endpoints(job) if e.job_name in described]
    schemas = await read.schemas.get_output_schemas([e.id for e in endpoints])
    found = []
    for endpoint in endpoints:
        schema = schemas.get(endpoint.id)
        outputs = (
            [f.path[-1] for f in output_fields(schema.root)]
            if schema is not None and schema.observations
            else []
        )
        spec = endpoint.spec
        text = endpoint_text(
            job=endpoint.job_name,
            job_description=described[endpoint.job_name],
            name=spec.name,
            description=spec.description,
            url_path=urlsplit(spec.url).path,
            outputs=outputs,
            inputs=[i.name for i in input_fields(spec)],
        )
        found.append(Indexed(endpoint, text))
    return found


async def refresh_vectors(
    reading: ReadingFactory,
    uow: UnitOfWorkFactory,
    embedder: Embedder,
    now: datetime,
    job: str | None = None,
) -> int:
    """Embed the endpoints (of `job`) whose indexed text changed since their vector was made,
    and save those vectors; returns how many. Raises `EmbedderUnavailable` (nothing saved)."""
    async with reading() as read:
        found = await indexed_endpoints(read, job)
        stored = await read.vectors.get_vectors(embedder.model)
    stale = [
        item
        for item in found
        if (known := stored.get(item.endpoint.id)) is None or known.digest != item.text.digest
    ]
    if not stale:
        return 0
    vectors = await embedder.embed([item.text.text for item in stale])
    rows = [
        StoredVector(item.endpoint.id, embedder.model, item.text.digest, tuple(vector))
        for item, vector in zip(stale, vectors, strict=True)
    ]
    async with uow() as tx:
        await tx.vectors.save_vectors(rows, now)
        await tx.commit()
    return len(rows)


def texts_of(found: Sequence[Indexed]) -> list[EndpointText]:
    return [item.text for item in found]
