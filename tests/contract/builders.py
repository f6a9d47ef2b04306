"""Small builders shared by the contract suites: declarations, responses, a run cycle."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from cronpilot.domain.model import Claim, EndpointSpec, Job, Response, Run, Schedule
from cronpilot.domain.ports import JobDeclaration, Store
from cronpilot.usecases.declarations import apply_to_catalog
from tests.support.finishing import finish_one

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
LEASE_SECONDS = 30.0
OK = Response(status_code=200, body={"ok": True})


def seconds(n: float) -> timedelta:
    return timedelta(seconds=n)


def spec(name: str, every: float = 60.0, **overrides: Any) -> EndpointSpec:
    base = EndpointSpec(name, f"https://example.com/{name}", Schedule(interval_seconds=every))
    return replace(base, **overrides)


def declaration(job: str, *specs: EndpointSpec, description: str = "") -> JobDeclaration:
    return JobDeclaration(Job(job, description=description), list(specs))


async def add_endpoint(
    store: Store, job: str, name: str, now: datetime, every: float = 60.0
) -> str:
    """Declare one interval endpoint at `now` (so it is first due at `now`); returns its id."""
    await apply_to_catalog(store.catalog, [declaration(job, spec(name, every))], now)
    return (await store.catalog.get_endpoint(f"{job}/{name}")).id


async def claim_one(store: Store, now: datetime, worker: str = "w1") -> Claim:
    claims = await store.claims.claim_due(now, worker, LEASE_SECONDS, 1)
    assert len(claims) == 1, claims
    return claims[0]


async def run_once(store: Store, now: datetime, response: Response = OK, worker: str = "w1") -> Run:
    """Claim the single due endpoint at `now` and finish it with `response`."""
    claim = await claim_one(store, now, worker)
    return await finish_one(store.claims, claim, worker, response, now)
