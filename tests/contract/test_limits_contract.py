"""Limits per target in the claim, on every store (memory, SQLite, PostgreSQL): a held slot
stays due and unclaimed, the hold is recorded on its key, and calls of other keys go on."""

from __future__ import annotations

from cronpilot.adapters.manual_clock import ManualClock
from cronpilot.domain.alerts.alerts import AlertEvent
from cronpilot.domain.model import RunTrigger
from cronpilot.domain.ports import JobDeclaration, Store
from cronpilot.domain.runs.transitions import queued_run
from cronpilot.domain.schedule.limits import HoldReason, Limit, Rate
from cronpilot.scheduler.watch import Watch
from cronpilot.usecases.declarations import apply_to_catalog
from tests.contract.builders import LEASE_SECONDS, OK, T0, declaration, seconds, spec
from tests.support.finishing import finish_one

PARTNER = Limit("partner-api", concurrency=2)


async def declare(store: Store, limit: Limit, count: int, *, free: int = 0) -> None:
    """`count` endpoints naming `limit` and `free` naming none, all due at T0."""
    limited = [spec(f"l{n}", limit=limit.key) for n in range(count)]
    others = [spec(f"f{n}") for n in range(free)]
    job = declaration("j", *limited, *others)
    await apply_to_catalog(store.catalog, [JobDeclaration(job.job, job.endpoints, (limit,))], T0)


async def test_concurrency_holds_the_rest_due_and_records_why(store: Store) -> None:
    await declare(store, PARTNER, 3, free=2)

    claims = await store.claims.claim_due(T0, "w1", LEASE_SECONDS, 10)

    names = sorted(c.endpoint.name for c in claims)
    assert names[:2] == ["f0", "f1"] and len(names) == 4
    [held_name] = {"l0", "l1", "l2"} - set(names)
    [status] = await store.catalog.limits()
    assert (status.in_flight, status.state.held, status.state.hold_reason) == (
        2,
        1,
        HoldReason.CONCURRENCY,
    )
    assert status.state.held_at == T0
    # Another worker finds the key full too; the held slot is still due, not lost.
    assert await store.claims.claim_due(T0, "w2", LEASE_SECONDS, 10) == []
    held = await store.catalog.get_endpoint(f"j/{held_name}")
    assert held.next_run_at == T0 and held.lease_owner is None
    # It waits for the hold to open rather than being claimed again at once.
    assert await store.claims.next_due_at() == T0 + seconds(0.5)

    limited = next(c for c in claims if c.endpoint.name.startswith("l"))
    await finish_one(store.claims, limited, "w1", OK, T0 + seconds(1))
    [taken] = await store.claims.claim_due(T0 + seconds(1), "w2", LEASE_SECONDS, 10)

    assert taken.endpoint.name == held_name and taken.slot_at == T0
    [status] = await store.catalog.limits()
    assert (status.in_flight, status.state.held) == (2, 0)


async def test_rate_spaces_calls_by_the_token_bucket(store: Store) -> None:
    limit = Limit("slow", rate=Rate(2, 1.0))
    await declare(store, limit, 4)

    first = await store.claims.claim_due(T0, "w1", LEASE_SECONDS, 10)
    assert len(first) == 1
    [status] = await store.catalog.limits()
    assert (status.state.held, status.state.hold_reason) == (3, HoldReason.RATE)
    # The next token comes half a second later: a worker sleeps until then.
    assert status.state.open_at == T0 + seconds(0.5)
    assert await store.claims.next_due_at() == T0 + seconds(0.5)
    assert await store.claims.claim_due(T0 + seconds(0.4), "w2", LEASE_SECONDS, 10) == []

    second = await store.claims.claim_due(T0 + seconds(0.5), "w2", LEASE_SECONDS, 10)
    later = await store.claims.claim_due(T0 + seconds(2), "w2", LEASE_SECONDS, 10)

    assert len(second) == 1
    # Two seconds idle refill only `burst` (1) token: no burst of calls after a quiet spell.
    assert len(later) == 1


async def test_burst_lets_that_many_go_at_once(store: Store) -> None:
    await declare(store, Limit("bursty", rate=Rate(1, 60.0), burst=3), 5)

    claims = await store.claims.claim_due(T0, "w1", LEASE_SECONDS, 10)

    assert len(claims) == 3
    [status] = await store.catalog.limits()
    assert status.state.open_at == T0 + seconds(60)


async def test_a_claim_of_fewer_items_draws_only_what_it_takes(store: Store) -> None:
    await declare(store, Limit("both", concurrency=5, rate=Rate(3, 1.0), burst=3), 3)

    [one] = await store.claims.claim_due(T0, "w1", LEASE_SECONDS, 1)
    rest = await store.claims.claim_due(T0, "w2", LEASE_SECONDS, 10)

    assert len(rest) == 2 and one.endpoint.id not in {c.endpoint.id for c in rest}


async def test_queued_runs_count_against_the_limit_too(store: Store) -> None:
    await declare(store, PARTNER, 2)
    first, second = await store.claims.claim_due(T0, "w1", LEASE_SECONDS, 10)
    await finish_one(store.claims, first, "w1", OK, T0 + seconds(1))
    endpoint = await store.catalog.get_endpoint(first.endpoint.id)
    asked = queued_run(
        endpoint,
        RunTrigger.MANUAL,
        slot_at=T0 + seconds(1),
        due_at=T0 + seconds(1),
        requested_by="admin",
        now=T0 + seconds(1),
    )
    [queued] = await store.claims.enqueue([asked])
    await declare(store, Limit("partner-api", concurrency=1), 2)

    # One call of the key is in flight (the second slot): the queued run waits.
    assert await store.claims.claim_due(T0 + seconds(2), "w2", LEASE_SECONDS, 10) == []
    await finish_one(store.claims, second, "w1", OK, T0 + seconds(3))
    [taken] = await store.claims.claim_due(T0 + seconds(3), "w2", LEASE_SECONDS, 10)
    assert taken.queued is not None and taken.queued.id == queued.id


async def test_apply_replaces_bounds_and_keeps_the_bucket(store: Store) -> None:
    await declare(store, Limit("k", rate=Rate(1, 60.0)), 2)
    await store.claims.claim_due(T0, "w1", LEASE_SECONDS, 10)

    await declare(store, Limit("k", concurrency=4, rate=Rate(1, 60.0)), 2)

    [status] = await store.catalog.limits()
    assert status.state.limit == Limit("k", concurrency=4, rate=Rate(1, 60.0))
    assert status.state.tokens == 0.0 and status.state.held == 1


async def test_a_slot_its_limit_holds_is_not_called_missed(store: Store) -> None:
    limited = [spec(f"l{n}", limit=PARTNER.key, missed_after_seconds=60) for n in range(3)]
    job = declaration("j", *limited)
    await apply_to_catalog(store.catalog, [JobDeclaration(job.job, job.endpoints, (PARTNER,))], T0)
    await store.claims.claim_due(T0, "w1", LEASE_SECONDS, 10)
    watch = Watch(store, ManualClock(T0 + seconds(120)), 10, worker_stale_seconds=60)

    # Two calls in flight hold the third slot back two minutes: it waits, it is not missed.
    assert await watch.check_once() == (0, 0)
    assert await store.notifications.open_episodes(AlertEvent.MISSED) == []
