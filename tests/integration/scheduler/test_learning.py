"""The learner catches up from its watermark: runs it was never told about (a full queue, a
worker that died) are learnt with the next one, each exactly once. A job's provides edges are
refreshed once a burst of new schemas in it is over, not once per schema."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence

from cronpilot.domain.graph.graph import EdgeType
from cronpilot.domain.graph.schema_inference import VOLATILE_AFTER
from cronpilot.domain.model import Response
from cronpilot.domain.ports import Store
from cronpilot.scheduler.learning import RunLearner
from cronpilot.usecases.declarations import apply_to_catalog
from cronpilot.usecases.schema_learning import rebuild_schema
from cronpilot.usecases.search import search_endpoints
from tests.contract.builders import (
    LEASE_SECONDS,
    T0,
    add_endpoint,
    declaration,
    run_once,
    seconds,
    spec,
)
from tests.integration.scheduler.builders import DEADLINE
from tests.support.clock import FakeClock
from tests.support.finishing import finish_one
from tests.support.side_tasks import running
from tests.support.units import WrappedUnits, counting


async def test_the_learner_catches_up_on_every_run_since_its_watermark(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "e", T0)
    endpoint = await store.catalog.get_endpoint(endpoint_id)
    learner = RunLearner(store.unit_of_work, store.reading, FakeClock())
    for n in range(5):
        body = {"n": n} if n < 4 else {"n": n, "extra": True}
        await run_once(store, T0 + seconds(60 * n), Response(status_code=200, body=body))

    schema = await learner.learn(endpoint)
    assert schema.observations == 5
    assert schema.json_schema()["required"] == ["n"]
    [drift] = await store.schemas.list_drift(endpoint_id)
    assert drift.changes == ("extra: new field",)

    await run_once(store, T0 + seconds(300), Response(status_code=200, body={"n": 9}))
    await run_once(store, T0 + seconds(360), Response(status_code=503, body={"error": "x"}))
    assert (await learner.learn(endpoint)).observations == 6
    assert (await learner.learn(endpoint)).observations == 6
    stored = await store.schemas.get_output_schema(endpoint_id)
    assert stored is not None
    assert (stored.observations, stored.through_slot) == (6, T0 + seconds(360))


async def test_a_burst_of_first_bodies_in_one_job_makes_one_refresh_of_its_provides_edges(
    store: Store,
) -> None:
    consumers = [spec(f"c{n}", url=f"https://example.com/c{n}?batch_id=1") for n in range(10)]
    await apply_to_catalog(store.catalog, [declaration("j", spec("src"), *consumers)], T0)
    endpoints = await store.catalog.list_endpoints("j")
    for claim in await store.claims.claim_due(T0, "w1", LEASE_SECONDS, len(endpoints)):
        body = {"batch_id": "b1"} if claim.endpoint.name == "src" else {"ok": True}
        await finish_one(store.claims, claim, "w1", Response(status_code=200, body=body), T0)
    reads: Counter[str] = Counter()
    units = WrappedUnits(
        store, counting(reads, "schemas", "get_output_schema", "get_output_schemas")
    )
    clock = FakeClock(T0)
    learner = RunLearner(units, units.reading, clock, refresh_seconds=5)

    *burst, last = endpoints
    for endpoint in burst:
        await learner.learn(endpoint)
    assert await store.graph.list_edges("j") == []
    async with running(learner):
        async with asyncio.timeout(DEADLINE):
            await clock.until_sleeping_until(T0 + seconds(5))
            clock.advance(4)
            await learner.learn(last)
            # The burst is still going on at the first tick: no refresh yet.
            clock.advance(1)
            await clock.until_sleeping_until(T0 + seconds(10))
            assert reads["get_output_schemas"] == 0
            clock.advance(5)
            # Asleep again: the refresh is done.
            await clock.until_sleeping_until(T0 + seconds(15))

    # One read per endpoint learnt, and one for the whole job (it was one per endpoint each).
    assert reads == {"get_output_schema": len(endpoints), "get_output_schemas": 1}
    edges = {(e.from_node, e.to_node, e.type) for e in await store.graph.list_edges("j")}
    assert edges == {("j/src", f"j/c{n}", EdgeType.PROVIDES) for n in range(10)}


async def test_an_endpoint_is_learnt_at_most_once_per_interval_and_nothing_is_missed(
    store: Store,
) -> None:
    endpoint_id = await add_endpoint(store, "j", "e", T0, every=1)
    endpoint = await store.catalog.get_endpoint(endpoint_id)
    clock = FakeClock(T0)
    # Its refresh of provides edges sleeps 7 s: no sleeper but the held learning ends at 15 s.
    learner = RunLearner(
        store.unit_of_work, store.reading, clock, refresh_seconds=7, learn_every_seconds=10
    )

    async def observed(n: int) -> int:
        """Record and observe the run of second `n`; the schema's observations once the
        learner has done what it does at once."""
        run = await run_once(store, T0 + seconds(n), Response(status_code=200, body={"n": n}))
        learner.observe(endpoint, run)
        await learner._queue.join()
        stored = await store.schemas.get_output_schema(endpoint_id)
        return 0 if stored is None else stored.observations

    async with running(learner):
        async with asyncio.timeout(DEADLINE):
            assert await observed(0) == 1
            # Learnt a moment ago: the next runs wait for the endpoint's turn.
            assert [await observed(n) for n in (1, 2, 3)] == [1, 1, 1]
            clock.advance(10)
            await clock.until_sleeping_until(T0 + seconds(15))
            stored = await store.schemas.get_output_schema(endpoint_id)
            assert stored is not None
            assert stored.observations == 4
            # Held again, then learnt by `idle` without waiting for the turn.
            assert await observed(4) == 4
            await learner.idle()
            stored = await store.schemas.get_output_schema(endpoint_id)
            assert stored is not None
            assert stored.observations == 5


async def test_the_fields_found_volatile_are_recorded_with_the_schema_and_by_a_rebuild(
    store: Store,
) -> None:
    endpoint_id = await add_endpoint(store, "j", "e", T0)
    endpoint = await store.catalog.get_endpoint(endpoint_id)
    learner = RunLearner(store.unit_of_work, store.reading, FakeClock())
    for n in range(VOLATILE_AFTER):
        at = T0 + seconds(60 * n)
        body = {"ok": True, "at": at.isoformat(), "n": n}
        await run_once(store, at, Response(status_code=200, body=body))
        await learner.learn(await store.catalog.get_endpoint(endpoint_id))
        expected = ("at", "n") if n + 1 >= VOLATILE_AFTER else ()
        assert (await store.catalog.get_endpoint(endpoint_id)).volatile_fields == expected

    await store.catalog.set_volatile_fields(endpoint_id, [])
    await rebuild_schema(store.unit_of_work, store.reading, endpoint, T0)
    assert (await store.catalog.get_endpoint(endpoint_id)).volatile_fields == ("at", "n")


class CountingEmbedder:
    """Vectors from the text's length, and every text it was asked for."""

    model = "counting"

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.asked += texts
        return [[float(len(text)), 1.0] for text in texts]


async def test_the_learner_keeps_the_vectors_a_search_made_in_step_on_a_change_of_shape(
    store: Store,
) -> None:
    endpoint_id = await add_endpoint(store, "j", "score", T0)
    endpoint = await store.catalog.get_endpoint(endpoint_id)
    embedder = CountingEmbedder()
    learner = RunLearner(store.unit_of_work, store.reading, FakeClock(), embedder=embedder)

    async def learnt(at: int, body: dict[str, float]) -> list[str]:
        await run_once(store, T0 + seconds(at), Response(status_code=200, body=body))
        await learner.learn(endpoint)
        await learner.refresh_stale()
        return list(embedder.asked)

    # No search yet: the scheduler embeds nothing (and loads no model).
    unsearched = await learnt(0, {"fraud_rate": 0.1})
    await search_endpoints(store.reading, embedder, "fraud", uow=store.unit_of_work, now=T0)
    [searched] = embedder.asked[:1]
    embedder.asked.clear()
    same_shape = await learnt(60, {"fraud_rate": 0.2})
    reshaped = await learnt(120, {"fraud_rate": 0.3, "orders": 3})

    assert unsearched == []
    assert "returns fraud rate" in searched
    assert same_shape == []
    [again] = reshaped
    assert "returns fraud rate, orders" in again
    [stored] = (await store.vectors.get_vectors("counting")).values()
    assert tuple(stored.vector) == (float(len(again)), 1.0)
