"""What an analysis reads at its start, from small repository reads in one read-only unit."""

from __future__ import annotations

from cronpilot.domain.errors import EndpointNotFound
from cronpilot.domain.model import Endpoint
from cronpilot.domain.planning.planning import AnalysisContext
from cronpilot.domain.ports.units import ReadingFactory
from cronpilot.planner.brief import HEALTH_RUNS


async def read_analysis_context(
    reading: ReadingFactory, endpoint: Endpoint, history: int
) -> AnalysisContext:
    """The job of `endpoint` and the job's endpoints, its newest `history` runs (and up to
    `HEALTH_RUNS` for the health by window), the job's edges, its output schema, the job's
    newest finished slot and the newest run of each of its endpoints, all from one snapshot (a
    `ReadingUnit`: no write lock, so scheduler finishes go on meanwhile).

    Raises `EndpointNotFound` when the endpoint or its job is gone."""
    async with reading() as tx:
        job_endpoints = await tx.catalog.list_endpoints(endpoint.job_name)
        if all(e.id != endpoint.id for e in job_endpoints):
            raise EndpointNotFound(endpoint.id)
        # One read for both: `recent` is the head of the health windows' runs.
        runs = await tx.runs.list_runs(endpoint.id, limit=max(history, HEALTH_RUNS))
        return AnalysisContext(
            job=await tx.catalog.get_job(endpoint.job_name),
            endpoints=job_endpoints,
            recent=runs[:history],
            edges=await tx.graph.list_edges(endpoint.job_name),
            schema=await tx.schemas.get_output_schema(endpoint.id),
            newest_finished_slot=await tx.runs.newest_finished_slot(endpoint.job_id),
            latest=await tx.runs.latest_runs([e.id for e in job_endpoints]),
            window=runs,
        )
