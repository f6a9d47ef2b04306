"""Deleting jobs and endpoints (`usecases.deletion.delete`) on every store: what goes with
them, and what stays."""

from __future__ import annotations

import pytest

from cronpilot.domain.errors import (
    EndpointNotFound,
    JobNotFound,
    PreconditionFailed,
    RunNotFound,
    StillDependedOn,
)
from cronpilot.domain.graph.graph import EdgeSighting, EdgeSource, EdgeType
from cronpilot.domain.model import new_id
from cronpilot.domain.planning.planning import Proposal, ProposalKind, ProposalStatus
from cronpilot.domain.ports import Store
from cronpilot.domain.versions import endpoint_version
from cronpilot.usecases.declarations import apply_to_catalog
from cronpilot.usecases.deletion import delete
from tests.contract.builders import T0, declaration, run_once, spec

ADMIN = "cli:ann@web-1"


async def _shop(store: Store) -> None:
    await apply_to_catalog(
        store.catalog,
        [
            declaration("shop", spec("stock"), spec("prices", depends_on=("stock",))),
            declaration("other", spec("keep", every=3600)),
        ],
        T0,
    )
    await store.graph.record(
        [
            EdgeSighting(
                "shop/stock", "shop/prices", EdgeType.DEPENDENCY, EdgeSource.OBSERVED, counted=True
            ),
            EdgeSighting(
                "other/keep", "shop/stock", EdgeType.PROVIDES, EdgeSource.INFERRED, counted=True
            ),
        ],
        T0,
    )


def _proposal(endpoint_id: str, job_id: str) -> Proposal:
    return Proposal(
        id=new_id(),
        endpoint_id=endpoint_id,
        job_id=job_id,
        kind=ProposalKind.INTERVAL,
        reason="r",
        proposed_by="heuristic",
        created_at=T0,
        status=ProposalStatus.PENDING,
        interval_seconds=30.0,
        ttl_seconds=600.0,
    )


async def test_an_upstream_is_refused_and_nothing_goes(store: Store) -> None:
    await _shop(store)
    with pytest.raises(StillDependedOn, match="shop/prices"):
        await delete(store.unit_of_work, "shop/stock", ADMIN, T0)
    assert len(await store.catalog.list_endpoints("shop")) == 2


async def test_an_endpoint_goes_with_its_runs_proposals_and_edges(store: Store) -> None:
    await _shop(store)
    prices = await store.catalog.get_endpoint("shop/prices")
    await store.planner.add_proposal(_proposal(prices.id, prices.job_id))
    stale = endpoint_version(prices)

    deleted = await delete(store.unit_of_work, "shop/prices", ADMIN, T0, if_version=stale)

    assert (deleted.job, deleted.endpoints) == (None, ["shop/prices"])
    with pytest.raises(EndpointNotFound):
        await store.catalog.get_endpoint("shop/prices")
    assert await store.planner.list_proposals() == []
    assert [e.to_node for e in await store.graph.list_edges()] == ["shop/stock"]


async def test_a_stale_version_deletes_nothing(store: Store) -> None:
    await _shop(store)
    with pytest.raises(PreconditionFailed):
        await delete(store.unit_of_work, "shop/prices", ADMIN, T0, if_version="0" * 32)
    await store.catalog.get_endpoint("shop/prices")


async def test_a_job_goes_with_its_endpoints_and_their_history(store: Store) -> None:
    await _shop(store)
    run = await run_once(store, T0)
    stock = await store.catalog.get_endpoint("shop/stock")
    await store.planner.add_proposal(_proposal(stock.id, stock.job_id))

    deleted = await delete(store.unit_of_work, "shop", ADMIN, T0)

    assert (deleted.job, deleted.endpoints) == ("shop", ["shop/prices", "shop/stock"])
    with pytest.raises(RunNotFound):
        await store.runs.get_run(run.id)
    with pytest.raises(JobNotFound):
        await store.catalog.get_job("shop")
    assert await store.planner.list_proposals() == []
    assert await store.graph.list_edges() == []
    assert [e.ref for e in await store.catalog.list_endpoints()] == ["other/keep"]
    with pytest.raises(JobNotFound):
        await delete(store.unit_of_work, "shop", ADMIN, T0)
