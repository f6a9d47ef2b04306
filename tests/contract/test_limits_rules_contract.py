"""Limits per target, kept in SQL in the PostgreSQL claim (and read by SQLite's), proven
against the domain rule they mirror (decision 0014): for generated states of endpoints, queued
runs and the keys' buckets and holds, every store claims what `domain.schedule.limits.decide_limits`
then `domain.runs.claiming.pick_claims` decide, and stores the keys' states they return."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st

from cronpilot.domain.model import Endpoint, Job, RunTrigger, ScheduleSource
from cronpilot.domain.ports import JobDeclaration, Store
from cronpilot.domain.runs.claiming import pick_claims
from cronpilot.domain.runs.transitions import queued_run
from cronpilot.domain.schedule.limits import (
    HoldReason,
    Limit,
    LimitState,
    Rate,
    calls_in_flight,
    decide_limits,
    limited_candidates,
)
from cronpilot.usecases.declarations import apply_to_catalog
from tests.contract.builders import LEASE_SECONDS, T0, seconds, spec
from tests.contract.states import empty, load
from tests.contract.test_rules_contract import MOMENTS, RULES, WORKER

KEYS = ("a", "b")


@dataclass(frozen=True)
class Shape:
    next_in: int
    leased: bool
    key: int | None
    """Index into KEYS; None: no limit."""


shapes = st.lists(
    st.builds(Shape, next_in=MOMENTS, leased=st.booleans(), key=st.none() | st.integers(0, 1)),
    min_size=1,
    max_size=6,
    unique_by=lambda shape: shape.next_in,
)
rates = st.none() | st.builds(Rate, st.integers(1, 3), st.sampled_from([1.0, 60.0]))
limit_states = st.builds(
    LimitState,
    limit=st.builds(
        Limit,
        key=st.just(""),
        concurrency=st.none() | st.integers(1, 3),
        rate=rates,
        burst=st.integers(1, 3),
    ),
    tokens=st.none() | st.sampled_from([0.0, 0.5, 1.0, 2.5]),
    refilled_at=st.none() | st.sampled_from([-30, -1, 0, 1]).map(lambda s: T0 + seconds(s)),
    version=st.integers(0, 3),
    held=st.integers(0, 2),
    hold_reason=st.none() | st.sampled_from(HoldReason),
    held_at=st.none() | st.just(T0 - seconds(5)),
)


@RULES
@given(
    endpoints=shapes,
    states=st.tuples(limit_states, limit_states),
    queued=st.lists(st.tuples(st.integers(0, 5), MOMENTS), max_size=3, unique_by=lambda q: q[1]),
    ahead=st.sampled_from([0, 1, 30]),
    limit=st.integers(1, 6),
)
async def test_a_limited_claim_takes_and_records_what_the_domain_decides(
    store: Store,
    *,
    endpoints: list[Shape],
    states: tuple[LimitState, LimitState],
    queued: list[tuple[int, int]],
    ahead: int,
    limit: int,
) -> None:
    await empty(store)
    keyed = [
        replace(state, limit=replace(state.limit, key=key), open_at=None)
        for key, state in zip(KEYS, states, strict=True)
    ]
    declared = [
        spec(f"e{n}", limit=None if s.key is None else KEYS[s.key]) for n, s in enumerate(endpoints)
    ]
    job = JobDeclaration(Job("j"), declared, [state.limit for state in keyed])
    await apply_to_catalog(store.catalog, [job], T0)
    before: dict[str, Endpoint] = {}
    for n, shape in enumerate(endpoints):
        stored = await store.catalog.get_endpoint(f"j/e{n}")
        before[stored.id] = replace(
            stored,
            next_run_at=T0 + seconds(shape.next_in),
            next_slot_at=None,
            next_run_source=ScheduleSource.BASELINE,
            lease_owner="another-worker" if shape.leased else None,
            lease_until=T0 + seconds(60) if shape.leased else None,
        )
    ordered = list(before.values())
    waiting = [
        queued_run(
            ordered[index % len(ordered)],
            RunTrigger.MANUAL,
            slot_at=T0 - timedelta(days=1) + seconds(due_in),
            due_at=T0 + seconds(due_in),
            requested_by="rules",
            now=T0 - timedelta(hours=1),
        )
        for index, due_in in queued
    ]
    await load(store, endpoints=ordered, history=waiting, limit_states=keyed)
    due_by = T0 + seconds(ahead)

    decision = decide_limits(
        limited_candidates(ordered, waiting, due_by, T0),
        {state.key: state for state in keyed},
        calls_in_flight(before, waiting),
        limit,
        T0,
    )
    within = {i: e for i, e in before.items() if e.spec.limit is None or i in decision.allowed}
    pick = pick_claims(within, waiting, due_by, limit, T0)
    claims = await store.claims.claim_due(T0, WORKER, LEASE_SECONDS, limit, due_by)

    assert [(c.endpoint.id, None if c.queued is None else c.queued.id) for c in claims] == [
        (run.endpoint_id, run.id) for run in pick.queued
    ] + [(e.id, None) for e in pick.slots]
    expected = {state.key: state for state in keyed} | {s.key: s for s in decision.changed}
    stored = {status.state.key: status.state for status in await store.catalog.limits()}
    assert stored.keys() == expected.keys()
    for key, state in expected.items():
        found = stored[key]
        # The hold opens at a time SQL and Python round to the microsecond each their way.
        if state.open_at is not None and found.open_at is not None:
            assert abs(found.open_at - state.open_at) <= timedelta(microseconds=1)
            found = replace(found, open_at=state.open_at)
        assert found == state
