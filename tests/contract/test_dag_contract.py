"""DagRepository contract, run on every store: multi-parent waits, children of the parent's
run, skips recorded with their reason, ready waits swept once their endpoint is free."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from cronpilot.domain.errors import LeaseLost
from cronpilot.domain.graph.dependencies import with_dependants
from cronpilot.domain.model import (
    Claim,
    ErrorKind,
    Finish,
    Response,
    Run,
    RunStatus,
    RunTrigger,
    Schedule,
    SkipKind,
    Steering,
)
from cronpilot.domain.ports import Store
from cronpilot.usecases.declarations import apply_to_catalog
from tests.contract.builders import LEASE_SECONDS, T0, claim_one, declaration, seconds, spec
from tests.support.finishing import finish_one, record_one


def _dependant(name: str, *upstreams: str, **fields: Any) -> Any:
    return spec(name, depends_on=upstreams, schedule=Schedule(), **fields)


async def _declare(store: Store, *specs: Any) -> None:
    await apply_to_catalog(store.catalog, [declaration("etl", *with_dependants(specs))], T0)


def _ok(body: Any, digest: str) -> Response:
    return Response(status_code=200, body=body, body_hash=digest)


async def _finish(
    store: Store, claim: Claim, response: Response, now: datetime
) -> tuple[Run, list[Claim]]:
    recorded = await record_one(store.claims, Finish(claim, "w1", response, now, LEASE_SECONDS))
    return recorded.run, recorded.started


async def test_a_node_with_two_parents_waits_for_both_in_its_dag_run(store: Store) -> None:
    await _declare(
        store,
        spec("root"),
        _dependant("a", "root"),
        _dependant("b", "root"),
        _dependant("join", "a", "b"),
    )
    root_run, children = await _finish(store, await claim_one(store, T0), _ok({"id": 7}, "h1"), T0)

    by_name = {c.endpoint.name: c for c in children}
    assert set(by_name) == {"a", "b"}
    for child in children:
        assert child.dag is not None
        assert (child.dag.dag_run_id, child.dag.parent_trace_id) == (
            root_run.trace_id,
            root_run.trace_id,
        )
        assert child.dag.upstream == {"root": {"id": 7}}
        started = await store.runs.get_run(child.run_id)
        assert (started.trigger, started.parent_trace_id) == (RunTrigger.DAG, root_run.trace_id)

    _, after_a = await _finish(store, by_name["a"], _ok({"rows": 3}, "ha"), T0 + seconds(1))
    assert after_a == []
    [wait] = await store.dag.list_waits()
    assert (wait.dag_run_id, set(wait.arrived)) == (root_run.trace_id, {"a"})

    b_run, after_b = await _finish(store, by_name["b"], _ok({"rows": 4}, "hb"), T0 + seconds(2))
    [join] = after_b
    assert join.endpoint.name == "join"
    assert join.dag is not None
    assert join.dag.upstream == {"a": {"rows": 3}, "b": {"rows": 4}}
    assert join.dag.parent_trace_id == b_run.trace_id
    assert await store.dag.list_waits() == []
    assert (await store.catalog.get_endpoint("etl/join")).lease_owner == "w1"


async def test_only_if_changed_skips_and_records_why_and_the_skip_propagates(
    store: Store,
) -> None:
    await _declare(
        store,
        spec("fetch"),
        _dependant("transform", "fetch", only_if_changed=True),
        _dependant("load", "transform"),
    )
    _, [transform] = await _finish(store, await claim_one(store, T0), _ok({"n": 1}, "same"), T0)
    _, [load] = await _finish(store, transform, _ok({"n": 1}, "t"), T0 + seconds(1))
    await _finish(store, load, _ok({}, "l"), T0 + seconds(2))

    second = await claim_one(store, T0 + seconds(60))
    fetch_run, started = await _finish(store, second, _ok({"n": 1}, "same"), T0 + seconds(60))

    assert started == []
    [skipped_transform, _] = await store.runs.list_runs(transform.endpoint.id)
    assert skipped_transform.status is RunStatus.SKIPPED
    assert skipped_transform.parent_trace_id == fetch_run.trace_id
    assert skipped_transform.error_message == (
        "skipped: only_if_changed: no upstream response changed"
    )
    [skipped_load, _] = await store.runs.list_runs(load.endpoint.id)
    assert skipped_load.status is RunStatus.SKIPPED
    assert skipped_load.parent_trace_id == skipped_transform.trace_id
    assert skipped_load.error_message == "skipped: upstream 'transform' was skipped"


async def test_a_failed_upstream_skips_its_dependants(store: Store) -> None:
    await _declare(store, spec("fetch"), _dependant("load", "fetch"))
    failure = Response(status_code=503, body={"error": "down"})
    _, started = await _finish(store, await claim_one(store, T0), failure, T0)
    assert started == []
    [skipped] = await store.runs.list_runs((await store.catalog.get_endpoint("etl/load")).id)
    assert skipped.error_message == "skipped: upstream 'fetch' failed"


async def test_a_dependant_that_asked_for_a_retry_after_is_skipped_until_then(
    store: Store,
) -> None:
    """`load` answered 429 with `Retry-After: 600`: the next DAG runs skip it, and say why."""
    await _declare(store, spec("fetch", every=10), _dependant("load", "fetch"))
    _, [load] = await _finish(store, await claim_one(store, T0), _ok({"n": 1}, "h1"), T0)
    busy = Response(
        status_code=429,
        error_kind=ErrorKind.HTTP_STATUS,
        error_message="HTTP 429 Too Many Requests",
        steering=Steering(retry_after_seconds=600),
    )
    await _finish(store, load, busy, T0 + seconds(1))

    _, started = await _finish(
        store, await claim_one(store, T0 + seconds(10)), _ok({}, "h2"), T0 + seconds(10)
    )

    assert started == []
    [skipped, _] = await store.runs.list_runs(load.endpoint.id)
    assert (skipped.status, skipped.error_message) == (
        RunStatus.SKIPPED,
        "skipped: the endpoint asked not to be called before 2030-01-01T12:10:01+00:00"
        " (Retry-After)",
    )
    later = T0 + seconds(610)
    _, [again] = await _finish(store, await claim_one(store, later), _ok({}, "h3"), later)
    assert again.endpoint.name == "load"


async def test_a_ready_dependant_still_leased_is_started_by_the_sweep(store: Store) -> None:
    await _declare(store, spec("fetch"), _dependant("load", "fetch"))
    _, [load] = await _finish(store, await claim_one(store, T0), _ok({"n": 1}, "h1"), T0)
    second = await claim_one(store, T0 + seconds(60))
    _, started = await _finish(store, second, _ok({"n": 2}, "h2"), T0 + seconds(60))

    assert started == []
    [wait] = await store.dag.list_waits()
    assert wait.ready
    assert await store.dag.claim_ready(T0 + seconds(61), "w2", LEASE_SECONDS, 10) == []

    await finish_one(store.claims, load, "w1", _ok({}, "l"), T0 + seconds(61))
    [swept] = await store.dag.claim_ready(T0 + seconds(62), "w2", LEASE_SECONDS, 10)
    assert swept.dag is not None
    assert swept.dag.upstream == {"fetch": {"n": 2}}
    assert (await store.catalog.get_endpoint("etl/load")).lease_owner == "w2"
    assert await store.dag.list_waits() == []


async def test_trace_neighbours_are_the_parent_and_the_previous_sibling(store: Store) -> None:
    await _declare(store, spec("root"), _dependant("a", "root"), _dependant("b", "root"))
    root_run, children = await _finish(store, await claim_one(store, T0), _ok({}, "h"), T0)
    runs = [await store.runs.get_run(c.run_id) for c in children]
    first, second = sorted(runs, key=lambda r: (r.started_at, r.id))

    assert await store.dag.trace_neighbours(first) == (root_run, None)
    assert await store.dag.trace_neighbours(second) == (root_run, first)
    assert await store.dag.trace_neighbours(root_run) == (None, None)


async def test_stale_waits_are_dropped(store: Store) -> None:
    await _declare(
        store,
        spec("root"),
        _dependant("a", "root"),
        _dependant("b", "root"),
        _dependant("j", "a", "b"),
    )
    _, children = await _finish(store, await claim_one(store, T0), _ok({}, "h"), T0)
    a = next(c for c in children if c.endpoint.name == "a")
    await _finish(store, a, _ok({}, "ha"), T0 + seconds(10))

    assert await store.dag.drop_stale_waits(T0 + seconds(10)) == 0
    assert len(await store.dag.list_waits()) == 1
    assert await store.dag.drop_stale_waits(T0 + seconds(11)) == 1
    assert await store.dag.list_waits() == []


async def test_a_parent_whose_lease_was_lost_records_nothing_and_starts_nothing(
    store: Store,
) -> None:
    await _declare(store, spec("root"), _dependant("a", "root"))
    claim = await claim_one(store, T0)
    # Reaped after its lease ran out (its worker seemed dead), then it reports.
    assert await store.claims.reap(T0 + seconds(LEASE_SECONDS + 1)) == 1

    with pytest.raises(LeaseLost):
        await _finish(store, claim, _ok({"id": 1}, "h"), T0)

    assert (await store.runs.get_run(claim.run_id)).status is RunStatus.ABANDONED
    a = await store.catalog.get_endpoint("etl/a")
    assert (a.lease_owner, await store.runs.list_runs(a.id)) == (None, [])
    assert await store.dag.list_waits() == []


async def test_run_if_reads_every_parent_of_the_dag_run_and_records_a_false_one(
    store: Store,
) -> None:
    """`join` waits for a and b: its condition reads a's run (stored when b finishes) and b's
    (in hand). False → skipped with the condition and the values it read, and the skip
    propagates; true → started."""
    await _declare(
        store,
        spec("root"),
        _dependant("a", "root"),
        _dependant("b", "root"),
        _dependant("join", "a", "b", run_if="a.body.rows + b.body.rows > 5"),
        _dependant("after", "join"),
    )
    for at, (rows_a, rows_b) in ((T0, (3, 1)), (T0 + seconds(60), (3, 4))):
        _, children = await _finish(store, await claim_one(store, at), _ok({}, f"r{at}"), at)
        by_name = {c.endpoint.name: c for c in children}
        await _finish(store, by_name["a"], _ok({"rows": rows_a}, "ha"), at + seconds(1))
        recorded = await record_one(
            store.claims,
            Finish(by_name["b"], "w1", _ok({"rows": rows_b}, "hb"), at + seconds(2), 60),
        )
        if rows_a + rows_b <= 5:
            assert (recorded.started, recorded.skips) == (
                [],
                (SkipKind.CONDITION, SkipKind.UPSTREAM_SKIPPED),
            )
    join = await store.catalog.get_endpoint("etl/join")
    [started, skipped] = await store.runs.list_runs(join.id)
    assert (started.status, skipped.status) == (RunStatus.RUNNING, RunStatus.SKIPPED)
    assert skipped.error_message == (
        "skipped: run_if 'a.body.rows + b.body.rows > 5' is false "
        "(a.body.rows = 3, b.body.rows = 1)"
    )
    [skipped_after] = await store.runs.list_runs((await store.catalog.get_endpoint("etl/after")).id)
    assert skipped_after.error_message == "skipped: upstream 'join' was skipped"


async def test_run_if_that_cannot_be_evaluated_skips_with_the_error(store: Store) -> None:
    await _declare(store, spec("fetch"), _dependant("load", "fetch", run_if="fetch.body.n > 0"))
    _, started = await _finish(store, await claim_one(store, T0), _ok({"m": 1}, "h"), T0)
    assert started == []
    [skipped] = await store.runs.list_runs((await store.catalog.get_endpoint("etl/load")).id)
    assert skipped.error_message == (
        "skipped: run_if 'fetch.body.n > 0' could not be evaluated: Key not found in map : \"n\""
    )


async def test_run_if_reads_the_latest_success_of_a_parent_outside_the_dag_run(
    store: Store,
) -> None:
    """`report` depends on two roots; a DAG run begun by `orders` does not wait for `stock`
    (another root), and its condition reads stock's latest successful run."""
    await _declare(
        store,
        spec("orders"),
        spec("stock", every=3600),
        _dependant("report", "orders", "stock", run_if="stock.body.level > orders.body.n"),
    )
    claims = await store.claims.claim_due(T0, "w1", LEASE_SECONDS, 2)
    by_name = {c.endpoint.name: c for c in claims}
    await _finish(store, by_name["stock"], _ok({"level": 5}, "s1"), T0)
    failed = Response(status_code=500, body={"level": 100})
    _, started = await _finish(store, by_name["orders"], _ok({"n": 2}, "o1"), T0 + seconds(1))
    assert [c.endpoint.name for c in started] == ["report"]
    await _finish(store, started[0], _ok({}, "r1"), T0 + seconds(2))
    # A failed stock run is not its latest response: the level read stays 5.
    later = T0 + seconds(3600)
    claims = await store.claims.claim_due(later, "w1", LEASE_SECONDS, 2)
    by_name = {c.endpoint.name: c for c in claims}
    await _finish(store, by_name["stock"], failed, later)
    _, started = await _finish(store, by_name["orders"], _ok({"n": 9}, "o2"), later + seconds(1))
    assert started == []
    report = await store.catalog.get_endpoint("etl/report")
    newest = (await store.runs.list_runs(report.id))[0]
    assert newest.error_message == (
        "skipped: run_if 'stock.body.level > orders.body.n' is false "
        "(stock.body.level = 5, orders.body.n = 9)"
    )
