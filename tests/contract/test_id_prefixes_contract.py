"""Ids by a unique prefix, as git takes commit hashes, on every store (memory, SQLite,
PostgreSQL): endpoints, runs, proposals and sessions."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cronpilot.domain.errors import (
    AmbiguousId,
    EndpointNotFound,
    ProposalNotFound,
    RunNotFound,
    SessionNotFound,
)
from cronpilot.domain.ids import CANDIDATES, MIN_PREFIX
from cronpilot.domain.model import PlannerMode
from cronpilot.domain.planning.planning import ProposalStatus
from cronpilot.domain.ports import Store
from tests.contract.builders import T0, add_endpoint, run_once, seconds
from tests.contract.test_planner_contract import _declare, _finish, _proposal


def _id(head: str, fill: str = "0") -> str:
    return head + fill * (32 - len(head))


async def test_a_unique_prefix_finds_endpoints_runs_and_sessions(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "a", T0)
    run = await run_once(store, T0)
    for prefix in (endpoint_id[:MIN_PREFIX], endpoint_id[:8], endpoint_id[:31].upper()):
        assert (await store.catalog.get_endpoint(prefix)).id == endpoint_id
    assert (await store.catalog.get_endpoint(endpoint_id[:8], for_update=True)).id == endpoint_id
    assert (await store.runs.get_run(run.id[:8])).id == run.id
    claim = await store.planner.claim_endpoint("j/a", T0 + seconds(1), "p1", 30)
    session = await _finish(store, claim, T0 + seconds(1))
    assert (await store.planner.get_session(session.id[:6])).id == session.id


async def test_a_prefix_too_short_or_not_hex_finds_nothing(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "a", T0)
    run = await run_once(store, T0)
    with pytest.raises(EndpointNotFound):
        await store.catalog.get_endpoint(endpoint_id[: MIN_PREFIX - 1])
    with pytest.raises(RunNotFound):
        await store.runs.get_run(run.id[: MIN_PREFIX - 1])
    with pytest.raises(RunNotFound):
        await store.runs.get_run(run.id[:4] + "%")
    with pytest.raises(RunNotFound):
        await store.runs.get_run(run.id + "0")
    with pytest.raises(SessionNotFound):
        await store.planner.get_session("ffff")


async def test_an_ambiguous_prefix_names_the_ids_it_could_mean(store: Store) -> None:
    await _declare(store, PlannerMode.REVIEW, "a")
    endpoint = await store.catalog.get_endpoint("j/a")
    made = [_id("abcd1"), _id("abcd2"), _id("abce")]
    for pid in made:
        await store.planner.add_proposal(_proposal(endpoint.id, endpoint.job_id, T0, id=pid))
    with pytest.raises(AmbiguousId) as ambiguous:
        await store.planner.get_proposal("abcd")
    assert ambiguous.value.candidates == made[:2]
    assert "abcd" in str(ambiguous.value) and "…" not in str(ambiguous.value)
    assert (await store.planner.get_proposal("abcd2")).id == made[1]
    assert (await store.planner.get_proposal("ABCE")).id == made[2]
    with pytest.raises(ProposalNotFound):
        await store.planner.get_proposal("abcf")


async def test_an_ambiguous_prefix_names_a_few_and_says_there_are_more(store: Store) -> None:
    await _declare(store, PlannerMode.REVIEW, "a")
    endpoint = await store.catalog.get_endpoint("j/a")
    made = [_id(f"beef{n}") for n in range(CANDIDATES + 2)]
    for pid in made:
        await store.planner.add_proposal(_proposal(endpoint.id, endpoint.job_id, T0, id=pid))
    with pytest.raises(AmbiguousId) as ambiguous:
        await store.planner.get_proposal("beef")
    assert ambiguous.value.candidates == made[:CANDIDATES]
    assert str(ambiguous.value).endswith(", …; give more characters")


async def test_a_whole_id_wins_over_the_ids_it_prefixes(store: Store) -> None:
    # Ids all have the same length, so no whole id prefixes another: an exact match is found
    # first and costs no prefix search.
    await _declare(store, PlannerMode.REVIEW, "a")
    endpoint = await store.catalog.get_endpoint("j/a")
    proposal = _proposal(endpoint.id, endpoint.job_id, T0, id=_id("cafe"))
    await store.planner.add_proposal(proposal)
    await store.planner.add_proposal(replace(proposal, id=_id("cafe", "1")))
    assert (await store.planner.get_proposal(_id("cafe"))).id == _id("cafe")
    decided = await store.planner.decide(
        _id("cafe"), ProposalStatus.REJECTED, "admin", "no", T0 + seconds(1)
    )
    assert decided.status is ProposalStatus.REJECTED
