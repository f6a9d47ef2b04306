"""Shell completion of what the store holds: endpoint refs, job names, and the ids of recent
runs and pending proposals (`cronpilot --install-completion` installs the script).

Each function is a parameter's `autocompletion=`: the shell runs `cronpilot` with
`_CRONPILOT_COMPLETE` set, and only the command being completed is loaded (`LazyGroup`).
Imports happen in the functions, so declaring a completion costs a command's start-up
nothing. The store is opened without a cipher (no key file made, no key check written, no
secret read), read through the same queries the listings use, within `DEADLINE_SECONDS`; any
failure completes nothing rather than print an error into the user's command line.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cronpilot.domain.ports import ReadingFactory

DEADLINE_SECONDS = 2.0
"""A database that does not answer within this completes nothing: the shell waits for it."""
RECENT = 50
"""Ids are completed from the newest this many runs (or pending proposals)."""

Read = Callable[["ReadingFactory"], Awaitable[Iterable[str]]]


def _complete(incomplete: str, read: Read) -> list[str]:
    """What `read` finds in the store that starts with `incomplete`, sorted; [] on any failure."""
    import asyncio

    from cronpilot.adapters.settings import load_settings
    from cronpilot.domain.errors import CronpilotError

    async def main() -> list[str]:
        from cronpilot.adapters.sql import open_sql_store

        store = await open_sql_store(load_settings().database_url)
        try:
            found = await read(store.reading)
        finally:
            await store.close()
        return sorted({item for item in found if item.startswith(incomplete)})

    try:
        return asyncio.run(asyncio.wait_for(main(), DEADLINE_SECONDS))
    except (CronpilotError, OSError, TimeoutError):
        return []


async def _endpoint_refs(reading: ReadingFactory) -> Iterable[str]:
    from cronpilot.usecases.queries.catalog import endpoint_refs

    return (await endpoint_refs(reading)).values()


async def _job_names(reading: ReadingFactory) -> Iterable[str]:
    from cronpilot.usecases.queries.catalog import list_jobs

    return [summary.job.name for summary in await list_jobs(reading)]


async def _nodes(reading: ReadingFactory) -> Iterable[str]:
    return [*await _job_names(reading), *await _endpoint_refs(reading)]


async def _run_ids(reading: ReadingFactory) -> Iterable[str]:
    from cronpilot.usecases.queries.runs import RunQuery, page_runs

    return [run.id for run in (await page_runs(reading, RunQuery(), RECENT)).items]


async def _proposal_ids(reading: ReadingFactory) -> Iterable[str]:
    from cronpilot.domain.planning.planning import ProposalStatus
    from cronpilot.usecases.queries.planner import list_proposals

    page = await list_proposals(reading, status=ProposalStatus.PENDING, limit=RECENT)
    return [proposal.id for proposal in page.items]


def endpoint_refs(incomplete: str) -> list[str]:
    """`job/endpoint` of every endpoint."""
    return _complete(incomplete, _endpoint_refs)


def job_names(incomplete: str) -> list[str]:
    return _complete(incomplete, _job_names)


def graph_nodes(incomplete: str) -> list[str]:
    """A job name or an endpoint ref: what `delete`, `graph path`, `pause` and `resume` take."""
    return _complete(incomplete, _nodes)


def run_ids(incomplete: str) -> list[str]:
    """The ids of the newest runs."""
    return _complete(incomplete, _run_ids)


def proposal_ids(incomplete: str) -> list[str]:
    """The ids of the newest pending proposals: those waiting for a decision."""
    return _complete(incomplete, _proposal_ids)
