"""Rules the SQL store keeps in SQL for speed, proven against the domain functions they mirror
(decision 0014): for generated states, loaded into every store, the rows a store selects and the
state it writes are what the domain function decides for the same state and `now`.

One store serves all examples of a test (`states.empty` between them); times are whole seconds
apart and unique where SQL orders by them, so that the order of ties cannot differ."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cronpilot.domain.alerts.alerts import (
    AlertEvent,
    Notification,
    NotificationStatus,
    deliverable,
    delivery_order,
)
from cronpilot.domain.model import (
    Endpoint,
    Job,
    Pause,
    PlannerMode,
    Run,
    RunStatus,
    RunTrigger,
    ScheduleSource,
    new_id,
)
from cronpilot.domain.planning.planning import (
    PlannerState,
    Proposal,
    ProposalKind,
    ProposalStatus,
    analysis_order,
    effective_mode,
    expired,
    lapsed,
    needs_analysis,
    needs_rules,
)
from cronpilot.domain.ports import JobDeclaration, Store
from cronpilot.domain.rules.rules import ActionKind, Rule, RuleAction
from cronpilot.domain.runs.claiming import lease_expired, leased, next_due, pick_claims
from cronpilot.domain.runs.transitions import after_reap, queued_run, started_run
from cronpilot.usecases.declarations import apply_to_catalog
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
    held: bool = False
    """Of the job `held`, whose pause the test draws; else of the job `rules`, never paused."""


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
        held=st.booleans(),
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


# The pause of the job `held`: none, until resumed, or until one of the moments.
job_pauses = st.none() | (st.none() | MOMENTS).map(
    lambda until: Pause("job held", None if until is None else T0 + seconds(until), "rules")
)


def _job(shape: EndpointShape) -> str:
    return "held" if shape.held else "rules"


async def _endpoints(
    store: Store, shapes: list[EndpointShape], job_pause: Pause | None = None
) -> list[Endpoint]:
    """Declared endpoints, one per shape, in the state it describes, loaded into `store`; the
    job `held` paused with `job_pause`."""
    await apply_to_catalog(
        store.catalog,
        [
            declaration(job, *(spec(f"e{n}") for n, s in enumerate(shapes) if _job(s) == job))
            for job in ("rules", "held")
        ],
        T0,
    )
    await store.catalog.set_job_pause("held", job_pause, T0)
    shaped = []
    for n, shape in enumerate(shapes):
        declared = await store.catalog.get_endpoint(f"{_job(shape)}/e{n}")
        assert declared.job_pause == (job_pause if shape.held else None)
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
    await load(store, endpoints=shaped)
    return shaped


@RULES
@given(
    endpoints=endpoint_shapes,
    queued=queued_shapes,
    ahead=MOMENTS.map(lambda moment: max(moment, 0)),
    limit=st.integers(1, 6),
    job_pause=job_pauses,
)
async def test_a_claim_takes_what_the_domain_picks(
    store: Store,
    *,
    endpoints: list[EndpointShape],
    queued: list[QueuedShape],
    ahead: int,
    limit: int,
    job_pause: Pause | None,
) -> None:
    """`claiming.pick_claims` (with `is_due`, `may_start`, `first_of_each` and
    `pauses.job_holds`) against the SQL claim; the runs it writes against
    `transitions.started_run`, the leases against `claiming.leased`; `next_due_at` against
    `claiming.next_due` (with `pauses.held_until`)."""
    await empty(store)
    shaped = await _endpoints(store, endpoints, job_pause)
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

    pick = pick_claims(before, waiting, T0 + seconds(ahead), limit, T0)
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


@dataclass(frozen=True)
class PlannerShape:
    """An endpoint as the planner sees it: its job, modes, failure, planner state and runs."""

    job: int
    mode: PlannerMode | None
    failing: bool
    state: PlannerState | None
    """Its planner state (its `endpoint_id` filled in when loaded); None: never looked at."""
    finished: list[int]
    running: list[int]
    seen_newest: bool
    """Its state has seen exactly the newest finished slot of its job: the boundary of "new"."""
    rules: bool
    rules_seen_newest: bool
    """As `seen_newest`, for the slot its rules have seen."""


RULES_OF = (Rule("true", RuleAction(ActionKind.BASELINE)),)


def _moment(offset: int | None) -> datetime | None:
    return None if offset is None else T0 + seconds(offset)


# The planner's times: mostly past, so that more endpoints pass the lease and backoff rules
# and reach the comparison of slots.
PLANNER_MOMENTS = st.sampled_from([-60, -30, -1, 0, 1])
MAYBE_MOMENT = st.none() | PLANNER_MOMENTS.map(lambda moment: T0 + seconds(moment))
planner_states = st.builds(
    PlannerState,
    endpoint_id=st.just(""),
    seen_slot_at=MAYBE_MOMENT,
    seen_failing=st.booleans(),
    next_analysis_at=MAYBE_MOMENT,
    retry_at=MAYBE_MOMENT,
    lease_owner=st.just("another-planner"),
    lease_until=MAYBE_MOMENT,
    rules_seen_slot_at=MAYBE_MOMENT,
).map(lambda state: state if state.lease_until else replace(state, lease_owner=None))
planner_shapes = st.lists(
    st.builds(
        PlannerShape,
        job=st.integers(0, 1),
        mode=st.none() | st.sampled_from(PlannerMode),
        failing=st.booleans(),
        state=st.none() | planner_states,
        finished=st.lists(PLANNER_MOMENTS, max_size=3, unique=True),
        running=st.lists(PLANNER_MOMENTS, max_size=1),
        seen_newest=st.booleans(),
        rules=st.booleans(),
        rules_seen_newest=st.booleans(),
    ),
    min_size=1,
    max_size=5,
)


def _run(endpoint: Endpoint, slot_in: int, status: RunStatus) -> Run:
    return Run(
        id=new_id(),
        endpoint_id=endpoint.id,
        job_id=endpoint.job_id,
        trace_id=new_id(),
        trigger=RunTrigger.SCHEDULE,
        schedule_source=ScheduleSource.BASELINE,
        status=status,
        slot_at=T0 + seconds(slot_in),
        started_at=T0 + seconds(slot_in),
        worker_id=WORKER,
    )


@settings(RULES, max_examples=60)
@given(
    shapes=planner_shapes,
    job_modes=st.lists(st.sampled_from(PlannerMode), min_size=2, max_size=2),
    limit=st.integers(1, 5),
)
async def test_a_planner_claims_what_needs_analysis(
    store: Store, shapes: list[PlannerShape], job_modes: list[PlannerMode], limit: int
) -> None:
    """`planning.needs_analysis` in `analysis_order` against the SQL planner's candidates."""
    await empty(store)
    jobs = [Job(f"job{n}", planner_mode=mode) for n, mode in enumerate(job_modes)]
    await apply_to_catalog(
        store.catalog,
        [
            JobDeclaration(
                job,
                [
                    spec(f"e{n}", planner_mode=shape.mode, rules=RULES_OF if shape.rules else ())
                    for n, shape in enumerate(shapes)
                    if shape.job == j
                ],
            )
            for j, job in enumerate(jobs)
        ],
        T0,
    )
    endpoints, history = [], []
    for n, shape in enumerate(shapes):
        declared = await store.catalog.get_endpoint(f"job{shape.job}/e{n}")
        endpoints.append(replace(declared, failure_count=1 if shape.failing else 0))
        # Slots of their own: the finished ones, then a running one apart from them.
        history += [_run(declared, slot, RunStatus.SUCCESS) for slot in shape.finished]
        history += [_run(declared, slot + 1000, RunStatus.RUNNING) for slot in shape.running]
    newest = {
        e.job_id: max(
            (run.slot_at for run in history if run.status.finished and run.job_id == e.job_id),
            default=None,
        )
        for e in endpoints
    }
    states = {
        e.id: replace(
            shape.state,
            endpoint_id=e.id,
            seen_slot_at=newest[e.job_id] if shape.seen_newest else shape.state.seen_slot_at,
            rules_seen_slot_at=(
                newest[e.job_id] if shape.rules_seen_newest else shape.state.rules_seen_slot_at
            ),
        )
        for e, shape in zip(endpoints, shapes, strict=True)
        if shape.state is not None
    }
    await load(store, endpoints=endpoints, history=history, planner_states=list(states.values()))

    def mode(e: Endpoint) -> PlannerMode:
        return effective_mode(
            e.spec.planner_mode, jobs[shapes[endpoints.index(e)].job].planner_mode
        )

    def due(e: Endpoint) -> tuple[bool, bool]:
        state = states.get(e.id, PlannerState(e.id))
        return (
            needs_analysis(state, e, mode(e), newest[e.job_id], T0),
            needs_rules(state, e, mode(e), newest[e.job_id], T0),
        )

    wanted = sorted(
        (e for e in endpoints if any(due(e))),
        key=lambda e: analysis_order(states.get(e.id, PlannerState(e.id))),
    )

    claims = await store.planner.claim_analyses(T0, WORKER, LEASE_SECONDS, limit)

    assert [claim.endpoint.id for claim in claims] == [e.id for e in wanted[:limit]]
    assert [claim.analysis_due for claim in claims] == [due(e)[0] for e in wanted[:limit]]


@RULES
@given(
    held=st.lists(
        st.tuples(st.sampled_from(ProposalStatus), st.none() | MOMENTS), min_size=1, max_size=6
    ),
    late=MOMENTS,
)
async def test_housekeeping_expires_what_has_lapsed(
    store: Store, held: list[tuple[ProposalStatus, int | None]], late: int
) -> None:
    """`planning.lapsed` and `expired` against the SQL of `expire_pending`."""
    await empty(store)
    endpoint = (await _endpoints(store, [EndpointShape(0, False, None)]))[0]
    made = [
        Proposal(
            id=new_id(),
            endpoint_id=endpoint.id,
            job_id=endpoint.job_id,
            kind=ProposalKind.INTERVAL,
            reason="rules",
            proposed_by="heuristic",
            created_at=T0 - timedelta(hours=1),
            status=status,
            interval_seconds=60.0,
            expires_at=_moment(expires_in),
        )
        for status, expires_in in held
    ]
    await load(store, pending=made)
    now = T0 + seconds(late)

    count = await store.planner.expire_pending(now)

    after = {p.id: p for p in await store.planner.list_proposals()}
    assert after == {p.id: expired(p, now) if lapsed(p, now) else p for p in made}
    assert count == sum(lapsed(p, now) for p in made)


@RULES
@given(
    held=st.lists(
        st.tuples(st.sampled_from(NotificationStatus), MOMENTS, st.none() | MOMENTS),
        min_size=1,
        max_size=6,
    ),
    limit=st.integers(1, 6),
)
async def test_the_outbox_hands_out_what_is_deliverable(
    store: Store, held: list[tuple[NotificationStatus, int, int | None]], limit: int
) -> None:
    """`alerts.deliverable` in `alerts.delivery_order` against the SQL outbox's claim."""
    await empty(store)
    endpoint = (await _endpoints(store, [EndpointShape(0, False, None)]))[0]
    outbox = [
        Notification(
            id=new_id(),
            endpoint_id=endpoint.id,
            job_id=endpoint.job_id,
            event=AlertEvent.FAILING,
            url="https://alerts.example.com/hook",
            payload={"rules": True},
            created_at=T0 - timedelta(hours=1),
            next_attempt_at=T0 + seconds(attempt_in),
            status=status,
            lease_owner=None if lease_in is None else "another-worker",
            lease_until=_moment(lease_in),
        )
        for status, attempt_in, lease_in in held
    ]
    await load(store, outbox=outbox)

    taken = await store.notifications.claim_due(T0, WORKER, LEASE_SECONDS, limit)

    wanted = sorted((n for n in outbox if deliverable(n, T0)), key=delivery_order)[:limit]
    assert [n.id for n in taken] == [n.id for n in wanted]
