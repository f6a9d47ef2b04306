"""Retries and steering, run on every store: the retry policy, a run's attempts, the endpoint's
`Retry-After` and the provenance of its hints survive the round trip, through every path that
writes them (apply, claim, finish, DAG finish, abandon, hints)."""

from __future__ import annotations

from datetime import timedelta

from cronpilot.domain.model import (
    Attempt,
    ErrorKind,
    Finish,
    HintSource,
    IntervalHint,
    OneShotHint,
    Response,
    RetryOn,
    RetryPolicy,
    Schedule,
    ScheduleSource,
    Steering,
)
from cronpilot.domain.ports import Store
from cronpilot.usecases.declarations import apply_to_catalog
from tests.contract.builders import LEASE_SECONDS, OK, T0, claim_one, declaration, seconds, spec
from tests.support.finishing import finish_one, record_one
from tests.support.scheduling import set_hints

POLICY = RetryPolicy(
    attempts=4,
    backoff_seconds=0.5,
    max_backoff_seconds=20.0,
    on=(RetryOn.SERVER_ERROR, RetryOn.TIMEOUT),
    unsafe=True,
)
STEERING = Steering(
    retry_after_seconds=300.0,
    next_run_interval_seconds=20.0,
    ignored=("Retry-After 'x' ignored: neither delta-seconds nor an HTTP date",),
)
ATTEMPTS = (
    Attempt(
        attempt=1,
        started_at=T0,
        duration_ms=12.5,
        status_code=None,
        error_kind=ErrorKind.TIMEOUT,
        error_message="no complete answer within 5 s",
    ),
    Attempt(
        attempt=2,
        started_at=T0 + seconds(2),
        duration_ms=3.0,
        status_code=429,
        error_kind=ErrorKind.HTTP_STATUS,
        error_message="HTTP 429 Too Many Requests",
        steering=STEERING,
    ),
)
BUSY = Response(
    status_code=429,
    error_kind=ErrorKind.HTTP_STATUS,
    error_message="HTTP 429 Too Many Requests",
    steering=STEERING,
    attempts=ATTEMPTS,
)


async def test_the_retry_policy_and_accept_hints_round_trip(store: Store) -> None:
    declared = spec("e", retry=POLICY, accept_hints=True)
    await apply_to_catalog(store.catalog, [declaration("j", declared)], T0)

    stored = await store.catalog.get_endpoint("j/e")
    again = await apply_to_catalog(store.catalog, [declaration("j", declared)], T0)
    claim = await claim_one(store, T0)

    assert stored.spec == declared
    assert again.unchanged == ["j", "j/e"]
    assert claim.endpoint.spec == declared


async def test_attempts_retry_after_and_an_endpoint_hint_round_trip(store: Store) -> None:
    await apply_to_catalog(store.catalog, [declaration("j", spec("e", accept_hints=True))], T0)
    claim = await claim_one(store, T0)

    run = await finish_one(store.claims, claim, "w1", BUSY, T0 + seconds(3))

    assert (run.attempt, run.attempts) == (2, ATTEMPTS)
    assert await store.runs.get_run(run.id) == run
    held = await store.catalog.get_endpoint("j/e")
    assert held.retry_after_at == T0 + seconds(303)
    assert (held.next_run_at, held.next_run_source) == (
        T0 + seconds(303),
        ScheduleSource.RETRY_AFTER,
    )
    assert held.interval_hint is not None
    assert (held.interval_hint.interval_seconds, held.interval_hint.source) == (
        20.0,
        HintSource.ENDPOINT,
    )

    later = T0 + seconds(303)
    honoured = await claim_one(store, later)
    assert honoured.endpoint.retry_after_at == later
    assert honoured.endpoint.interval_hint == held.interval_hint
    assert honoured.schedule_source is ScheduleSource.RETRY_AFTER
    await finish_one(store.claims, honoured, "w1", OK, later)
    freed = await store.catalog.get_endpoint("j/e")
    assert freed.retry_after_at is None
    assert freed.next_run_source is ScheduleSource.HINT_INTERVAL


async def test_an_abandoned_slot_keeps_the_retry_after(store: Store) -> None:
    await apply_to_catalog(
        store.catalog, [declaration("j", spec("e", max_interval_seconds=30))], T0
    )
    await finish_one(store.claims, await claim_one(store, T0), "w1", BUSY, T0)
    # The max clamp brings the next slot before the Retry-After.
    claim = await claim_one(store, T0 + seconds(30))

    await store.claims.abandon(claim, "w1", "stopped", T0 + seconds(31))

    endpoint = await store.catalog.get_endpoint("j/e")
    assert endpoint.retry_after_at == T0 + seconds(300)


async def test_a_dag_finish_takes_the_answer_s_steering(store: Store) -> None:
    root = spec("root", dependants=("child",))
    child = spec("child", schedule=Schedule(), depends_on=("root",))
    await apply_to_catalog(store.catalog, [declaration("j", root, child)], T0)
    claim = await claim_one(store, T0)

    run = (await record_one(store.claims, Finish(claim, "w1", BUSY, T0, LEASE_SECONDS))).run

    assert run.attempts == ATTEMPTS
    endpoint = await store.catalog.get_endpoint("j/root")
    assert endpoint.retry_after_at == T0 + seconds(300)


async def test_a_finish_takes_hints_by_the_declaration_as_it_is_when_the_call_ends(
    store: Store,
) -> None:
    """`accept_hints` turned off while the call was under way: its `Cronpilot-Next-Run` is
    not taken."""
    await apply_to_catalog(store.catalog, [declaration("j", spec("e", accept_hints=True))], T0)
    claim = await claim_one(store, T0)
    await apply_to_catalog(store.catalog, [declaration("j", spec("e"))], T0 + seconds(1))

    hinting = Response(status_code=200, steering=Steering(next_run_interval_seconds=20.0))
    await finish_one(store.claims, claim, "w1", hinting, T0 + seconds(2))

    endpoint = await store.catalog.get_endpoint("j/e")
    assert endpoint.interval_hint is None
    assert endpoint.next_run_source is ScheduleSource.BASELINE


async def test_hints_keep_who_wrote_them(store: Store) -> None:
    await apply_to_catalog(store.catalog, [declaration("j", spec("e"))], T0)
    endpoint = await store.catalog.get_endpoint("j/e")
    expires = T0 + timedelta(hours=1)
    planner = IntervalHint(30.0, expires, "planner says")
    from_endpoint = OneShotHint(T0 + seconds(10), expires, "endpoint says", HintSource.ENDPOINT)

    await set_hints(store.catalog, endpoint.id, planner, from_endpoint, T0)

    stored = await store.catalog.get_endpoint("j/e")
    assert (stored.interval_hint, stored.oneshot_hint) == (planner, from_endpoint)
    assert stored.interval_hint is not None
    assert stored.interval_hint.source is HintSource.PLANNER
