"""Rules the SQL store keeps in SQL for speed, proven against the domain functions they mirror
(decision 0013): for generated states, loaded into every store, the rows a store selects and the
state it writes are what the domain function decides for the same state and `now`.

One store serves all examples of a test (`states.empty` between them); times are whole seconds
apart and unique where SQL orders by them, so that the order of ties cannot differ."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cronpilot.domain.claiming import lease_expired, leased, next_due, pick_claims
from cronpilot.domain.model import Endpoint, Pause, RunTrigger, ScheduleSource
from cronpilot.domain.ports import Store
from cronpilot.domain.transitions import after_reap, queued_run, started_run
from tests.contract.builders import LEASE_SECONDS, T0, declaration, seconds, spec
from tests.contract.states import empty, load

RULES = settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    # One store for every example, emptied between them (see `states.empty`).
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
WORKER = "w1"


@dataclass(frozen=True)
class EndpointShape:
    next_in: int
    """Seconds from T0 to its next run; never before T0 - 1 s, the late grace, so no slot is
    missed (catch-up has its own tests)."""
    paused: bool
    lease_in: int | None
    """Leased by another worker until T0 + this many seconds; None: free."""


@dataclass(frozen=True)
class QueuedShape:
    endpoint: int
    manual: bool
    due_in: int


# Few distinct times, shared by every kind of time in a state, so that the boundaries of each
# rule (due exactly at the horizon, a manual run due when its endpoint is) come up often.
MOMENTS = st.sampled_from([-1, 0, 1, 10, 29, 30, 31, 60])
endpoint_shapes = st.lists(
    st.builds(
        EndpointShape,
        next_in=MOMENTS,
        paused=st.booleans(),
        lease_in=st.none() | MOMENTS.map(lambda moment: moment - 30),
    ),
    min_size=1,
    max_size=5,
    unique_by=lambda shape: shape.next_in,
)
queued_shapes = st.lists(
    st.builds(QueuedShape, endpoint=st.integers(0, 4), manual=st.booleans(), due_in=MOMENTS),
    max_size=6,
    unique_by=lambda shape: shape.due_in,
)


async def _endpoints(store: Store, shapes: list[EndpointShape]) -> list[Endpoint]:
    """Declared endpoints, one per shape, in the state it describes, loaded into `store`."""
    specs = [spec(f"e{n}") for n in range(len(shapes))]
    await store.catalog.apply([declaration("rules", *specs)], T0)
    shaped = []
    for n, shape in enumerate(shapes):
        declared = await store.catalog.get_endpoint(f"rules/e{n}")
        shaped.append(
            replace(
                declared,
                next_run_at=None if shape.paused else T0 + seconds(shape.next_in),
                next_slot_at=None,
                next_run_source=ScheduleSource.PAUSED if shape.paused else ScheduleSource.BASELINE,
                pause=Pause("held") if shape.paused else None,
                lease_owner=None if shape.lease_in is None else "another-worker",
                lease_until=None if shape.lease_in is None else T0 + seconds(shape.lease_in),
            )
        )
    await load(store, shaped)
    return shaped


@RULES
@given(
    endpoints=endpoint_shapes,
    queued=queued_shapes,
    ahead=MOMENTS.map(lambda moment: max(moment, 0)),
    limit=st.integers(1, 6),
)
async def test_a_claim_takes_what_the_domain_picks(
    store: Store, endpoints: list[EndpointShape], queued: list[QueuedShape], ahead: int, limit: int
) -> None:
    """`claiming.pick_claims` (with `is_due`, `may_start`, `first_of_each`) against the SQL
    claim; the runs it writes against `transitions.started_run`, the leases against
    `claiming.leased`; `next_due_at` against `claiming.next_due`."""
    await empty(store)
    shaped = await _endpoints(store, endpoints)
    waiting = [
        queued_run(
            shaped[shape.endpoint % len(shaped)],
            RunTrigger.MANUAL if shape.manual else RunTrigger.BACKFILL,
            # Slots of their own, far from the schedule's: no slot is taken twice.
            slot_at=T0 - timedelta(days=1) + seconds(shape.due_in),
            due_at=T0 + seconds(shape.due_in),
            requested_by="rules",
            now=T0 - timedelta(hours=1),
        )
        for shape in queued
    ]
    await load(store, history=waiting)
    before = {e.id: e for e in await store.catalog.list_endpoints()}
    assert before == {e.id: e for e in shaped}

    assert await store.claims.next_due_at() == next_due(before.values(), waiting)

    pick = pick_claims(before, waiting, T0 + seconds(ahead), limit)
    claims = await store.claims.claim_due(T0, WORKER, LEASE_SECONDS, limit, T0 + seconds(ahead))

    assert [(c.endpoint.id, None if c.queued is None else c.queued.id) for c in claims] == [
        (run.endpoint_id, run.id) for run in pick.queued
    ] + [(e.id, None) for e in pick.slots]
    until = T0 + seconds(LEASE_SECONDS)
    for claim in claims:
        assert claim.endpoint == leased(before[claim.endpoint.id], WORKER, until)
        assert await store.runs.get_run(claim.run_id) == started_run(claim, WORKER, T0)
    claimed = {claim.endpoint.id for claim in claims}
    after = {e.id: e for e in await store.catalog.list_endpoints()}
    assert after == {
        id_: leased(e, WORKER, until) if id_ in claimed else e for id_, e in before.items()
    }


@RULES
@given(endpoints=endpoint_shapes, late=MOMENTS.map(lambda moment: moment - 30))
async def test_the_reaper_ends_the_leases_the_domain_says(
    store: Store, endpoints: list[EndpointShape], late: int
) -> None:
    """`claiming.lease_expired` against the reaper's SQL; what it leaves against
    `transitions.after_reap` (no run was running)."""
    await empty(store)
    before = {e.id: e for e in await _endpoints(store, endpoints)}
    now = T0 + seconds(late)

    assert await store.claims.reap(now) == 0

    after = {e.id: e for e in await store.catalog.list_endpoints()}
    assert after == {
        id_: after_reap(e, [], now) if lease_expired(e, now) else e for id_, e in before.items()
    }
