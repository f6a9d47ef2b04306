"""A caller's reach applied by the queries on every store (memory, SQLite, PostgreSQL): the
lists hold the jobs in reach only, filtered by the stores' `job_ids`, and a name or id of
another job is answered as one nothing has (decision 0049)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from cronpilot.domain.access.access import EVERY_JOB, Reach
from cronpilot.domain.errors import NotFound
from cronpilot.domain.ports import Store
from cronpilot.usecases.queries import approvals, catalog, graph, notifications, planner, runs
from cronpilot.usecases.queries.reach import check_target
from tests.support.clock import FakeClock
from tests.support.reach_world import ReachWorld, reach_world


@pytest.fixture
async def world(store: Store) -> ReachWorld:
    return await reach_world(store, FakeClock().now())


async def test_lists_hold_the_jobs_in_reach_only(store: Store, world: ReachWorld) -> None:
    own, reading = world.own, store.reading
    shop = Reach(frozenset({own.job}))

    async def listed(reach: Reach) -> dict[str, set[str]]:
        page_runs = await runs.page_runs(reading, runs.RunQuery(), 50, reach=reach)
        proposals = await planner.list_proposals(reading, reach=reach)
        sessions = await planner.list_sessions(reading, reach=reach)
        gates = await approvals.list_approvals(reading, reach=reach)
        sent = await notifications.list_notifications(reading, reach=reach)
        edges = {
            node
            for each in (await graph.job_graphs(reading, reach=reach)).values()
            for edge in each.edges
            for node in (edge.from_node, edge.to_node)
        }
        return {
            "jobs": {s.job.name for s in await catalog.list_jobs(reading, reach=reach)},
            "endpoints": {
                e.endpoint.ref for e in await catalog.list_endpoints(reading, reach=reach)
            },
            "runs": {r.id for r in page_runs.items},
            "proposals": {p.id for p in proposals.items},
            "sessions": {s.id for s in sessions.items},
            "approvals": {a.id for a in gates.items},
            "notifications": {n.id for n in sent.items},
            "graph": {node.split("/")[0] for node in edges},
        }

    seen = await listed(shop)
    everything = await listed(EVERY_JOB)
    # With the job's webhooks its proposal and approval raised alerts of their own too.
    alerts = seen.pop("notifications")
    assert {own.notification, own.failed, own.held} <= alerts
    assert alerts == everything["notifications"] - await _alerts_of(store, world.foreign.job)
    assert seen == {
        "jobs": {own.job},
        "endpoints": set(own.endpoints),
        "runs": {own.run, own.queued},
        "proposals": {own.proposal, own.applied},
        "sessions": {own.session},
        "approvals": {own.approval},
        "graph": {own.job},
    }
    assert everything["jobs"] == {own.job, world.foreign.job}
    assert world.foreign.run in everything["runs"]
    assert {own.job, world.foreign.job} <= everything["graph"]


async def _alerts_of(store: Store, job: str) -> set[str]:
    found = await notifications.list_notifications(store.reading, job=job)
    return {n.id for n in found.items}


async def _error(ask: Awaitable[Any]) -> str:
    with pytest.raises(NotFound) as raised:
        await ask
    return str(raised.value)


async def test_another_job_s_names_and_ids_are_answered_as_unknown_ones(
    store: Store, world: ReachWorld
) -> None:
    reading, shop = store.reading, Reach(frozenset({world.own.job}))
    foreign = world.foreign
    lookups: list[tuple[str, Callable[[str], Awaitable[Any]]]] = [
        (foreign.job, lambda v: catalog.show_job(reading, v, reach=shop)),
        (foreign.endpoints[0], lambda v: catalog.show_endpoint(reading, v, reach=shop)),
        (foreign.endpoint_ids[1][:8], lambda v: catalog.show_endpoint(reading, v, reach=shop)),
        (foreign.run, lambda v: runs.show_run(reading, v, reach=shop)),
        (foreign.proposal, lambda v: planner.show_proposal(reading, v, reach=shop)),
        (foreign.session, lambda v: planner.show_session(reading, v, reach=shop)),
        (foreign.failed, lambda v: check_target(reading, shop, notification=v)),
        (foreign.held, lambda v: check_target(reading, shop, notification=v)),
        (foreign.job, lambda v: runs.page_runs(reading, runs.RunQuery(job=v), 5, reach=shop)),
    ]
    for value, lookup in lookups:
        unknown = "f" * len(value) if value[0] in "0123456789abcdef" else "q" * len(value)
        seen, missing = await _error(lookup(value)), await _error(lookup(unknown))
        assert seen.replace(value, "?") == missing.replace(unknown, "?")
