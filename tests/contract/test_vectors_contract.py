"""VectorRepository contract (the search index's embeddings), run on every store."""

from __future__ import annotations

from collections.abc import Mapping

from cronpilot.domain.ports import Store, StoredVector
from tests.contract.builders import T0, add_endpoint, seconds


def read(found: Mapping[str, StoredVector]) -> dict[str, tuple[str, str, tuple[float, ...]]]:
    """Each vector as a tuple: a store may hand back another sequence type."""
    return {key: (v.model, v.digest, tuple(v.vector)) for key, v in found.items()}


async def test_vectors_are_saved_replaced_and_read_by_model(store: Store) -> None:
    first = await add_endpoint(store, "j", "a", T0)
    second = await add_endpoint(store, "j", "b", T0)
    await store.vectors.save_vectors(
        [
            StoredVector(first, "m1", "d1", (0.5, -0.25, 1.0)),
            StoredVector(second, "m1", "d2", (0.0, 1.0, 0.0)),
            StoredVector(first, "m2", "d1", (1.0,)),
        ],
        T0,
    )
    await store.vectors.save_vectors([StoredVector(first, "m1", "d3", (0.75, 0.0, 0.5))], T0)

    by_m1 = await store.vectors.get_vectors("m1")

    assert read(by_m1) == {
        first: ("m1", "d3", (0.75, 0.0, 0.5)),
        second: ("m1", "d2", (0.0, 1.0, 0.0)),
    }
    assert read(await store.vectors.get_vectors("m2")) == {first: ("m2", "d1", (1.0,))}
    assert await store.vectors.get_vectors("other") == {}


async def test_a_deleted_endpoint_takes_its_vectors_and_unknown_ones_are_skipped(
    store: Store,
) -> None:
    kept = await add_endpoint(store, "j", "kept", T0)
    gone = await add_endpoint(store, "j", "gone", T0)
    await store.vectors.save_vectors(
        [
            StoredVector(kept, "m", "d", (1.0,)),
            StoredVector(gone, "m", "d", (1.0,)),
            StoredVector("0" * 32, "m", "d", (1.0,)),
        ],
        T0 + seconds(1),
    )

    await store.catalog.delete_endpoints([gone])

    assert list(await store.vectors.get_vectors("m")) == [kept]
