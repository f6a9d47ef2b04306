"""The learner catches up from its watermark: runs it was never told about (a full queue, a
worker that died) are learnt with the next one, each exactly once."""

from __future__ import annotations

from domain.model import Response
from domain.ports import Store
from scheduler.learning import SchemaLearner
from tests.contract.builders import T0, add_endpoint, run_once, seconds
from tests.support.clock import FakeClock


async def test_the_learner_catches_up_on_every_run_since_its_watermark(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "e", T0)
    endpoint = await store.catalog.get_endpoint(endpoint_id)
    learner = SchemaLearner(store, FakeClock())
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
