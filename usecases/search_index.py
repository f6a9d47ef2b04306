"""What the search index holds of each endpoint: its text, from its names, descriptions, URL
path, learnt output fields and request inputs. A vector is stale when its text's digest
changed, and the search that finds it stale embeds it again (`usecases.search`)."""

from __future__ import annotations

from dataclasses import dataclass

from cronpilot.domain.access.access import EVERY_JOB, Reach
from cronpilot.domain.graph.provides import output_fields
from cronpilot.domain.model import Endpoint
from cronpilot.domain.ports import Repositories
from cronpilot.domain.search.search import EndpointText, indexed_text
from cronpilot.usecases.queries.reach import reached_job, reached_jobs


@dataclass(frozen=True, slots=True)
class Indexed:
    endpoint: Endpoint
    text: EndpointText


async def indexed_endpoints(
    read: Repositories, job: str | None = None, reach: Reach = EVERY_JOB
) -> list[Indexed]:
    """Every endpoint in reach (of `job` when given; raises `JobNotFound`) with its indexed
    text."""
    jobs = [await reached_job(read, job, reach)] if job else await reached_jobs(read, reach)
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
        text = indexed_text(endpoint, described[endpoint.job_name], outputs)
        found.append(Indexed(endpoint, text))
    return found
