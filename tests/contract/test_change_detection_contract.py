"""Change detection on every store: declared `change_ignores` and learnt volatile fields are
kept with the endpoint, survive re-applies, claims, finishes and pauses, and are read back as
written."""

from __future__ import annotations

import pytest

from cronpilot.domain.errors import EndpointNotFound
from cronpilot.domain.model import Pause
from cronpilot.domain.ports import Store
from cronpilot.usecases.declarations import apply_to_catalog
from tests.contract.builders import OK, T0, claim_one, declaration, seconds, spec
from tests.support.finishing import finish_one
from tests.support.scheduling import set_pause

IGNORED = ("checked_at", "meta.request_id", "rows[0].at")


async def test_change_ignores_are_stored_and_a_change_of_them_is_an_update(store: Store) -> None:
    await apply_to_catalog(
        store.catalog, [declaration("ops", spec("health", change_ignores=IGNORED))], T0
    )
    stored = await store.catalog.get_endpoint("ops/health")
    assert stored.spec.change_ignores == IGNORED

    fewer = spec("health", change_ignores=IGNORED[:1])
    report = await apply_to_catalog(store.catalog, [declaration("ops", fewer)], T0 + seconds(1))

    assert report.updated == ["ops/health"]
    assert (await store.catalog.get_endpoint("ops/health")).spec.change_ignores == IGNORED[:1]


async def test_volatile_fields_are_set_alone_and_kept_through_everything_else(
    store: Store,
) -> None:
    await apply_to_catalog(store.catalog, [declaration("ops", spec("health"))], T0)
    endpoint = await store.catalog.get_endpoint("ops/health")
    assert endpoint.volatile_fields == ()

    await store.catalog.set_volatile_fields(endpoint.id, ["checked_at", "seq"])
    # A claim and its finish, a pause, a re-declaration: none of them touches the learnt set.
    claim = await claim_one(store, T0)
    assert claim.endpoint.volatile_fields == ("checked_at", "seq")
    await finish_one(store.claims, claim, "w1", OK, T0)
    await set_pause(store.catalog, endpoint.id, Pause("maintenance"), T0)
    changed = spec("health", url="https://example.com/v2")
    await apply_to_catalog(store.catalog, [declaration("ops", changed)], T0 + seconds(1))

    after = await store.catalog.get_endpoint("ops/health")
    assert (after.volatile_fields, after.spec.url) == (("checked_at", "seq"), changed.url)
    assert (after.pause, after.last_slot_at) == (Pause("maintenance"), T0)
    [listed] = await store.catalog.list_endpoints("ops")
    assert listed.volatile_fields == ("checked_at", "seq")

    await store.catalog.set_volatile_fields(endpoint.id, [])
    assert (await store.catalog.get_endpoint(endpoint.id)).volatile_fields == ()


async def test_volatile_fields_of_an_unknown_endpoint_are_refused(store: Store) -> None:
    with pytest.raises(EndpointNotFound):
        await store.catalog.set_volatile_fields("no-such-endpoint", ["at"])


async def test_volatile_fields_are_written_in_the_unit_of_the_schema_they_come_from(
    store: Store,
) -> None:
    await apply_to_catalog(store.catalog, [declaration("ops", spec("health"))], T0)
    endpoint = await store.catalog.get_endpoint("ops/health")

    async with store.unit_of_work() as tx:
        await tx.catalog.set_volatile_fields(endpoint.id, ["checked_at"])
        # Not committed: rolled back with the unit.

    assert (await store.catalog.get_endpoint(endpoint.id)).volatile_fields == ()
    async with store.unit_of_work() as tx:
        await tx.catalog.set_volatile_fields(endpoint.id, ["checked_at"])
        await tx.commit()
    assert (await store.catalog.get_endpoint(endpoint.id)).volatile_fields == ("checked_at",)
