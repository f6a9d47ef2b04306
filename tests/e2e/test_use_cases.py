"""The five use cases end to end: scheduler passes and the LLM planner (real `openai` SDK,
scripted loopback server) against the endpoint simulator, checked in the SQLite database."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from pathlib import Path

import pytest

from cronpilot.domain.model import Run, ScheduleSource
from cronpilot.domain.planning.planning import Proposal, ProposalKind, ProposalStatus, SessionStatus
from tests.support.use_cases import START, USE_CASES, Story, run_story

CASES = {case.name: case for case in USE_CASES}
Runner = Callable[[str], Awaitable[Story]]


@pytest.fixture
async def story(tmp_path: Path) -> AsyncIterator[Runner]:
    opened: list[Story] = []

    async def run(name: str) -> Story:
        told = await run_story(CASES[name], f"sqlite+aiosqlite:///{tmp_path / 'story.db'}")
        opened.append(told)
        return told

    yield run
    for told in opened:
        await told.store.close()


async def _proposals(told: Story, ref: str) -> list[Proposal]:
    endpoint = await told.store.catalog.get_endpoint(ref)
    newest_first = await told.store.planner.list_proposals(endpoint_id=endpoint.id)
    return list(reversed(newest_first))


async def _runs(told: Story, ref: str) -> list[Run]:
    endpoint = await told.store.catalog.get_endpoint(ref)
    return list(reversed(await told.store.runs.list_runs(endpoint.id, limit=500)))


def _at(seconds: float) -> timedelta:
    return timedelta(seconds=seconds)


async def _sessions_submitted(told: Story) -> None:
    sessions = await told.store.planner.list_sessions(limit=1000)
    assert sessions
    assert {s.status for s in sessions} == {SessionStatus.SUBMITTED}
    assert all(s.tool_errors == 0 for s in sessions)


async def test_flash_sale_switches_the_investigator_on_and_off(story: Runner) -> None:
    told = await story("flash-sale")

    proposals = await _proposals(told, "flash-sale/investigator")
    # One analysis resumes and sets the interval at the same instant: their order among
    # themselves is not defined, so compare each instant's proposals as a set.
    steps = [
        {(p.kind, p.status) for p in made}
        for _, made in itertools.groupby(proposals, key=lambda p: p.created_at)
    ]
    assert steps == [
        {(ProposalKind.PAUSE, ProposalStatus.APPLIED)},
        {
            (ProposalKind.RESUME, ProposalStatus.APPLIED),
            (ProposalKind.INTERVAL, ProposalStatus.APPLIED),
        },
        {(ProposalKind.PAUSE, ProposalStatus.APPLIED)},
    ]
    [interval] = [p for p in proposals if p.kind is ProposalKind.INTERVAL]
    assert "below 0.02: investigator off" in proposals[0].reason
    assert "above 0.05: investigate every 10 s" in interval.reason
    switched_on, switched_off = interval.created_at, proposals[-1].created_at
    runs = await _runs(told, "flash-sale/investigator")
    assert runs, "the investigator never ran"
    assert all(switched_on <= r.slot_at <= switched_off for r in runs)
    assert len(runs) >= 2
    investigator = await told.store.catalog.get_endpoint("flash-sale/investigator")
    assert investigator.pause is not None
    await _sessions_submitted(told)


async def test_etl_transform_schedules_itself_when_fetch_reports_records(story: Runner) -> None:
    told = await story("etl")

    proposals = await _proposals(told, "etl/transform")
    assert len(proposals) >= 3
    assert all(p.kind is ProposalKind.NEXT_TIME for p in proposals)
    assert all(p.status is ProposalStatus.APPLIED for p in proposals)
    assert all("fetch reported" in p.reason for p in proposals)
    runs = await _runs(told, "etl/transform")
    oneshots = [r.slot_at for r in runs if r.schedule_source is ScheduleSource.HINT_ONESHOT]
    assert len(oneshots) >= 3
    assert set(oneshots) <= {p.at for p in proposals}
    await _sessions_submitted(told)


async def test_health_watches_a_failing_region_closely(story: Runner) -> None:
    told = await story("health")

    tightened = [
        p
        for region in ("eu", "us", "ap")
        for p in await _proposals(told, f"health/{region}")
        if p.interval_seconds == 2
    ]
    assert tightened, "no region was ever watched more closely"
    assert all(p.status is ProposalStatus.APPLIED for p in tightened)
    assert all("degraded" in p.reason or "down" in p.reason for p in tightened)
    watched = await told.store.catalog.get_endpoint(
        next(
            e.ref
            for e in await told.store.catalog.list_endpoints("health")
            if e.id == tightened[0].endpoint_id
        )
    )
    runs = await _runs(told, watched.ref)
    after = [r for r in runs if r.slot_at > tightened[0].created_at]
    gaps = [(b.slot_at - a.slot_at).total_seconds() for a, b in itertools.pairwise(after)]
    assert gaps and min(gaps) <= 3


async def test_queue_depth_drives_the_processor(story: Runner) -> None:
    told = await story("queue")

    proposals = await _proposals(told, "queue/processor")
    intervals = [p.interval_seconds for p in proposals]
    assert 3 in intervals and 60 in intervals
    assert any("> 200" in p.reason for p in proposals)
    assert any("< 50" in p.reason for p in proposals)
    runs = await _runs(told, "queue/processor")
    assert any(r.schedule_source is ScheduleSource.HINT_INTERVAL for r in runs)
    await _sessions_submitted(told)


async def test_billing_figure_triggers_cleanup(story: Runner) -> None:
    told = await story("billing")

    # While the projection stays over budget, each cleanup run is followed by another soon.
    proposals = await _proposals(told, "billing/cleanup")
    assert proposals
    for proposal in proposals:
        assert (proposal.kind, proposal.status) == (ProposalKind.NEXT_TIME, ProposalStatus.APPLIED)
        assert proposal.reason == "projected spend is over budget: clean up now"
        assert proposal.created_at >= START + _at(40)
    runs = await _runs(told, "billing/cleanup")
    oneshots = [r.slot_at for r in runs if r.schedule_source is ScheduleSource.HINT_ONESHOT]
    assert oneshots == [p.at for p in proposals]
    assert all(r.slot_at - START in (_at(0), _at(30)) for r in runs if r.slot_at not in oneshots)
    await _sessions_submitted(told)
