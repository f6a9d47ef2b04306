"""Short ways to declare endpoints, record what they answered and build a planner in tests."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from cronpilot.adapters.bootstrap import planner_config
from cronpilot.domain.model import (
    JSON,
    Endpoint,
    EndpointSpec,
    Job,
    PlannerMode,
    Response,
    Run,
    Schedule,
)
from cronpilot.domain.planning.guardrails import GuardrailLimits
from cronpilot.domain.ports import JobDeclaration, Store, Telemetry, Waker
from cronpilot.domain.runs.telemetry import NO_TELEMETRY
from cronpilot.planner.session import Analyst
from cronpilot.planner.worker import PlannerWorker
from cronpilot.usecases.declarations import apply_to_catalog
from cronpilot.usecases.proposals import ProposalDesk
from tests.support.clock import FakeClock
from tests.support.finishing import finish_one
from tests.support.settings import limits_for_tests, settings_for_tests

T0 = datetime(2030, 1, 7, 12, 0, tzinfo=UTC)


def spec(name: str, every: float = 60.0, **fields: Any) -> EndpointSpec:
    base = EndpointSpec(name, f"https://example.com/{name}", Schedule(interval_seconds=every))
    return replace(base, **fields)


async def declare(
    store: Store,
    now: datetime,
    *specs: EndpointSpec,
    job: str = "j",
    mode: PlannerMode = PlannerMode.AUTO,
    description: str = "",
) -> dict[str, Endpoint]:
    declared = JobDeclaration(Job(job, description=description, planner_mode=mode), specs)
    await apply_to_catalog(store.catalog, [declared], now)
    return {e.name: e for e in await store.catalog.list_endpoints(job)}


def digest(body: JSON) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


async def answer(store: Store, ref: str, body: JSON, status: int = 200) -> Run:
    """Run `ref`'s next slot (at its own next run time) with `body`; other endpoints due then
    are released untouched."""
    endpoint = await store.catalog.get_endpoint(ref)
    at = endpoint.next_run_at
    assert at is not None, f"{ref} is not scheduled"
    claims = await store.claims.claim_due(at, "tester", 30, 1000)
    [mine] = [claim for claim in claims if claim.endpoint.id == endpoint.id]
    for claim in claims:
        if claim is not mine:
            await store.claims.release(claim, "tester")
    response = Response(
        status_code=status,
        body=body,
        size_bytes=len(json.dumps(body)),
        body_hash=digest(body),
        started_at=at,
        finished_at=at,
    )
    return await finish_one(store.claims, mine, "tester", response, at)


def make_planner(
    store: Store,
    analyst: Analyst,
    clock: FakeClock,
    *,
    waker: Waker | None = None,
    limits: GuardrailLimits | None = None,
    telemetry: Telemetry = NO_TELEMETRY,
    **config: Any,
) -> PlannerWorker:
    config.setdefault("worker_id", "p1")
    limits = limits or limits_for_tests()
    desk = ProposalDesk(store.unit_of_work, store.reading, waker, limits, telemetry=telemetry)
    return PlannerWorker(
        store,
        analyst,
        clock,
        replace(planner_config(settings_for_tests(**config)), limits=limits),
        desk=desk,
        telemetry=telemetry,
    )
