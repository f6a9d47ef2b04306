"""The learner merges each run's body in memory as it is handed over: a run that answers the
shape already learnt reads nothing and writes nothing then (its counts are saved later, in
one write); a change of shape is saved at once and refreshes its job's provides edges; a
schema another worker saved meanwhile is learnt again from the store, nothing lost."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

from cronpilot.domain.graph.graph import EdgeType
from cronpilot.domain.graph.schema_inference import VOLATILE_AFTER
from cronpilot.domain.model import JSON, Endpoint, Response, Run
from cronpilot.domain.ports import Store
from cronpilot.scheduler.learning import RunLearner
from cronpilot.usecases.declarations import apply_to_catalog
from tests.contract.builders import LEASE_SECONDS, T0, declaration, seconds, spec
from tests.support.clock import FakeClock
from tests.support.finishing import finish_one
from tests.support.side_tasks import running
from tests.support.units import WrappedUnits


class _Counted:
    """A repository whose every method call is counted as `repository.method`."""

    def __init__(self, inner: Any, name: str, calls: Counter[str]) -> None:
        self._inner = inner
        self._name = name
        self._calls = calls

    def __getattr__(self, method: str) -> Any:
        real = getattr(self._inner, method)
        if not callable(real):
            return real

        async def counted(*args: Any, **kwargs: Any) -> Any:
            self._calls[f"{self._name}.{method}"] += 1
            return await real(*args, **kwargs)

        return counted


def counted_units(store: Store) -> tuple[WrappedUnits, Counter[str]]:
    """Units over the real `store` whose repository calls (reads and writes) are counted."""
    calls: Counter[str] = Counter()
    return WrappedUnits(store, lambda name, found: _Counted(found, name, calls)), calls


async def _recorded(store: Store, name: str, at: datetime, body: JSON) -> tuple[Endpoint, Run]:
    """Claim the due endpoint `name` at `at` (others due are given back) and record `body`:
    the endpoint as claimed, and its run, as the worker hands them to the learner."""
    found = None
    for claim in await store.claims.claim_due(at, "w1", LEASE_SECONDS, 10):
        if claim.endpoint.name == name:
            found = claim
        else:
            await store.claims.release(claim, "w1")
    assert found is not None
    run = await finish_one(store.claims, found, "w1", Response(status_code=200, body=body), at)
    return found.endpoint, run


async def _handed_over(learner: RunLearner, endpoint: Endpoint, run: Run) -> None:
    learner.observe(endpoint, run)
    await learner._queue.join()


async def test_a_run_of_the_same_shape_reads_and_writes_nothing_until_its_counts_are_saved(
    store: Store,
) -> None:
    await apply_to_catalog(store.catalog, [declaration("j", spec("e"))], T0)
    units, calls = counted_units(store)
    learner = RunLearner(units, units.reading, FakeClock(T0))
    async with running(learner):
        # A first run: nothing stored to read; its schema is saved at once.
        await _handed_over(learner, *await _recorded(store, "e", T0, {"n": 0, "at": "x"}))
        assert calls["schemas.save_output_schema"] == 1
        assert not [call for call in calls if call.startswith(("runs.", "schemas.get"))]

        await learner.refresh_stale()
        calls.clear()
        for n in range(1, 4):
            await _handed_over(
                learner, *await _recorded(store, "e", T0 + seconds(60 * n), {"n": n, "at": "y"})
            )
        assert calls == Counter()
        stored = await store.schemas.get_output_schema((await store.catalog.get_endpoint("j/e")).id)
        assert stored is not None
        assert stored.observations == 1

        await learner.idle()
    # The counts of three runs in one write; no edge refreshed, no schema read.
    assert calls == Counter({"schemas.save_output_schema": 1})
    stored = await store.schemas.get_output_schema((await store.catalog.get_endpoint("j/e")).id)
    assert stored is not None
    assert stored.observations == 4
    assert stored.root.properties["n"].changes == 3
    assert stored.through_slot == T0 + seconds(180)


async def test_a_new_field_is_saved_at_once_and_refreshes_the_edges_a_same_shape_run_does_not(
    store: Store,
) -> None:
    consumer = spec("c", url="https://example.com/c?batch_id=1")
    await apply_to_catalog(store.catalog, [declaration("j", spec("src"), consumer)], T0)
    units, calls = counted_units(store)
    learner = RunLearner(units, units.reading, FakeClock(T0))
    refreshes = lambda: calls["graph.record"]  # noqa: E731

    async def learnt(at: int, body: JSON) -> int:
        await _handed_over(learner, *await _recorded(store, "src", T0 + seconds(at), body))
        await learner.refresh_stale()
        return refreshes()

    async with running(learner):
        assert await learnt(0, {"ok": True}) == 1
        assert await store.graph.list_edges("j") == []
        saves = calls["schemas.save_output_schema"]
        assert await learnt(60, {"ok": True, "batch_id": "b1"}) == 2
        assert calls["schemas.save_output_schema"] == saves + 1
        edges = {(e.from_node, e.to_node, e.type) for e in await store.graph.list_edges("j")}
        assert edges == {("j/src", "j/c", EdgeType.PROVIDES)}
        [drift] = await store.schemas.list_drift((await store.catalog.get_endpoint("j/src")).id)
        assert drift.changes == ("batch_id: new field",)

        assert await learnt(120, {"ok": False, "batch_id": "b2"}) == 2
        await learner.idle()
        assert refreshes() == 2


async def test_fields_found_volatile_are_saved_at_once_though_the_shape_stays(
    store: Store,
) -> None:
    await apply_to_catalog(store.catalog, [declaration("j", spec("e"))], T0)
    learner = RunLearner(store.unit_of_work, store.reading, FakeClock(T0))
    async with running(learner):
        for n in range(VOLATILE_AFTER):
            at = T0 + seconds(60 * n)
            body = {"ok": True, "at": at.isoformat(), "n": n}
            await _handed_over(learner, *await _recorded(store, "e", at, body))
            expected = ("at", "n") if n + 1 >= VOLATILE_AFTER else ()
            assert (await store.catalog.get_endpoint("j/e")).volatile_fields == expected


async def test_a_schema_saved_by_another_worker_is_learnt_again_from_the_store(
    store: Store,
) -> None:
    await apply_to_catalog(store.catalog, [declaration("j", spec("e"))], T0)
    clock = FakeClock(T0)
    ours = RunLearner(store.unit_of_work, store.reading, clock, learn_every_seconds=0)
    theirs = RunLearner(store.unit_of_work, store.reading, clock, learn_every_seconds=0)

    async def handed(learner: RunLearner, n: int, body: JSON) -> None:
        await _handed_over(learner, *await _recorded(store, "e", T0 + seconds(60 * n), body))

    async with running(ours), running(theirs):
        await handed(ours, 0, {"n": 0})
        await handed(ours, 1, {"n": 1})
        # Theirs learns run 1 from the store with its own, before ours saves its counts.
        await handed(theirs, 2, {"n": 2})
        await ours.idle()
        await handed(theirs, 3, {"n": 3, "new": 1})
        await handed(ours, 4, {"n": 4, "new": 1})
        await ours.idle()
        await theirs.idle()
    stored = await store.schemas.get_output_schema((await store.catalog.get_endpoint("j/e")).id)
    assert stored is not None
    assert (stored.observations, stored.through_slot) == (5, T0 + seconds(240))
    assert stored.root.properties["n"].seen == 5
    [drift] = await store.schemas.list_drift(stored.endpoint_id)
    assert drift.changes == ("new: new field",)
