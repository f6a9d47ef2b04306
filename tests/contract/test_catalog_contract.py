"""CatalogRepository contract, run on every store (memory, SQLite, PostgreSQL)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from sqlalchemy import select, update

from cronpilot.adapters.crypto import SEALED_PREFIX
from cronpilot.adapters.sql import SqlStore
from cronpilot.adapters.sql.tables import endpoints
from cronpilot.domain.errors import EndpointNotFound, InvalidSchedule, JobNotFound
from cronpilot.domain.model import (
    IntervalHint,
    Objective,
    OneShotHint,
    Pause,
    Reference,
    RunTrigger,
    Schedule,
    ScheduleSource,
)
from cronpilot.domain.ports import CatalogFigures, JobDeclaration, SecretCipher, Store
from cronpilot.domain.runs.transitions import queued_run
from cronpilot.usecases.declarations import apply_to_catalog
from tests.contract.builders import T0, add_endpoint, declaration, seconds, spec
from tests.support.scheduling import set_hints, set_pause


async def test_apply_creates_then_reports_unchanged(store: Store) -> None:
    declared = [declaration("shop", spec("orders"), spec("stock"))]

    first = await apply_to_catalog(store.catalog, declared, T0)
    ids = [e.id for e in await store.catalog.list_endpoints()]
    second = await apply_to_catalog(store.catalog, declared, T0 + seconds(5))

    assert first.created == ["shop", "shop/orders", "shop/stock"]
    assert (second.created, second.updated) == ([], [])
    assert second.unchanged == ["shop", "shop/orders", "shop/stock"]
    assert [e.id for e in await store.catalog.list_endpoints()] == ids


async def test_apply_updates_spec_and_keeps_id_and_runtime_state(store: Store) -> None:
    await apply_to_catalog(store.catalog, [declaration("shop", spec("orders"))], T0)
    before = await store.catalog.get_endpoint("shop/orders")
    await set_pause(store.catalog, before.id, Pause("maintenance"), T0)

    report = await apply_to_catalog(
        store.catalog,
        [declaration("shop", spec("orders", url="https://example.com/v2"), description="new")],
        T0 + seconds(1),
    )

    after = await store.catalog.get_endpoint("shop/orders")
    assert report.updated == ["shop", "shop/orders"]
    assert after.id == before.id
    assert after.spec.url == "https://example.com/v2"
    assert after.pause == Pause("maintenance")
    assert (await store.catalog.get_job("shop")).description == "new"


async def test_apply_leaves_undeclared_endpoints_alone_and_reports_them(store: Store) -> None:
    first = [
        declaration("shop", spec("stock"), spec("orders"), spec("audit")),
        declaration("ops", spec("ping")),
    ]
    assert (await apply_to_catalog(store.catalog, first, T0)).absent == []

    report = await apply_to_catalog(store.catalog, [declaration("shop", spec("orders"))], T0)

    assert report.absent == ["shop/audit", "shop/stock"]
    assert report.unchanged == ["shop", "shop/orders"]
    names = [e.name for e in await store.catalog.list_endpoints("shop")]
    assert names == ["audit", "orders", "stock"]
    assert (await apply_to_catalog(store.catalog, [declaration("ops")], T0)).absent == ["ops/ping"]


async def test_apply_is_all_or_nothing(store: Store) -> None:
    await apply_to_catalog(store.catalog, [declaration("shop", spec("orders"))], T0)
    broken = spec("bad", schedule=Schedule(cron="not a cron"))

    with pytest.raises(InvalidSchedule):
        await apply_to_catalog(
            store.catalog,
            [
                declaration("shop", spec("orders", url="https://example.com/changed")),
                declaration("billing", spec("invoices"), broken),
            ],
            T0,
        )

    assert [job.name for job in await store.catalog.list_jobs()] == ["shop"]
    assert [e.ref for e in await store.catalog.list_endpoints()] == ["shop/orders"]
    assert (await store.catalog.get_endpoint("shop/orders")).spec.url.endswith("/orders")


async def test_get_by_id_and_by_ref(store: Store) -> None:
    await apply_to_catalog(store.catalog, [declaration("shop", spec("orders"))], T0)

    by_ref = await store.catalog.get_endpoint("shop/orders")
    by_id = await store.catalog.get_endpoint(by_ref.id)

    assert by_id == by_ref
    assert (by_ref.job_name, by_ref.name, by_ref.job_id) == (
        "shop",
        "orders",
        (await store.catalog.get_job("shop")).id,
    )
    with pytest.raises(EndpointNotFound):
        await store.catalog.get_endpoint("shop/missing")
    with pytest.raises(EndpointNotFound):
        await store.catalog.get_endpoint("0" * 32)
    with pytest.raises(JobNotFound):
        await store.catalog.get_job("missing")


async def test_lists_are_ordered_and_filtered(store: Store) -> None:
    await apply_to_catalog(
        store.catalog, [declaration("zoo", spec("b"), spec("a")), declaration("app", spec("c"))], T0
    )

    assert [job.name for job in await store.catalog.list_jobs()] == ["app", "zoo"]
    assert [e.ref for e in await store.catalog.list_endpoints()] == ["app/c", "zoo/a", "zoo/b"]
    assert [e.ref for e in await store.catalog.list_endpoints("zoo")] == ["zoo/a", "zoo/b"]


async def test_pause_and_resume_replan(store: Store) -> None:
    await apply_to_catalog(store.catalog, [declaration("shop", spec("orders"))], T0)
    endpoint = await store.catalog.get_endpoint("shop/orders")

    paused = await set_pause(store.catalog, endpoint.id, Pause("by hand"), T0)
    assert (paused.next_run_at, paused.next_run_source) == (None, ScheduleSource.PAUSED)
    assert await store.catalog.get_endpoint(endpoint.id) == paused

    resumed = await set_pause(store.catalog, endpoint.id, None, T0 + seconds(5))
    assert resumed.pause is None
    assert (resumed.next_run_at, resumed.next_run_source) == (
        T0 + seconds(5),
        ScheduleSource.BASELINE,
    )
    with pytest.raises(EndpointNotFound):
        await set_pause(store.catalog, "0" * 32, None, T0)


async def test_hints_replan(store: Store) -> None:
    hourly = spec("report", schedule=Schedule(cron="0 * * * *"))
    await apply_to_catalog(store.catalog, [declaration("shop", hourly)], T0 + seconds(60))
    endpoint = await store.catalog.get_endpoint("shop/report")
    assert endpoint.next_run_at == T0 + seconds(3600)

    now = T0 + seconds(60)
    soon = OneShotHint(T0 + seconds(300), expires_at=T0 + seconds(900), reason="spike")
    hinted = await set_hints(store.catalog, endpoint.id, None, soon, now)
    assert (hinted.next_run_at, hinted.next_run_source) == (
        T0 + seconds(300),
        ScheduleSource.HINT_ONESHOT,
    )
    assert hinted.oneshot_hint == soon
    assert await store.catalog.get_endpoint(endpoint.id) == hinted

    # Never run yet, so an interval hint is due at once.
    interval = IntervalHint(600, expires_at=T0 + seconds(900), reason="busy")
    hinted = await set_hints(store.catalog, endpoint.id, interval, None, now)
    assert (hinted.next_run_at, hinted.next_run_source) == (now, ScheduleSource.HINT_INTERVAL)
    assert (hinted.interval_hint, hinted.oneshot_hint) == (interval, None)
    assert await store.catalog.get_endpoint(endpoint.id) == hinted

    cleared = await set_hints(store.catalog, endpoint.id, None, None, now)
    assert (cleared.next_run_at, cleared.next_run_source) == (
        T0 + seconds(3600),
        ScheduleSource.BASELINE,
    )


async def test_secret_headers_are_encrypted_at_rest(store: Store, cipher: SecretCipher) -> None:
    headers = {"Authorization": "Bearer s3cr3t", "X-Api-Key": "k3y", "Accept": "application/json"}
    await apply_to_catalog(
        store.catalog, [declaration("shop", spec("orders", headers=headers))], T0
    )

    assert (await store.catalog.get_endpoint("shop/orders")).spec.headers == headers
    if isinstance(store, SqlStore):
        async with store.engine.connect() as conn:
            raw = (await conn.execute(select(endpoints.c.headers))).scalar_one()
        assert raw["Accept"] == "application/json"
        for name in ("Authorization", "X-Api-Key"):
            assert raw[name].startswith(SEALED_PREFIX)
            assert cipher.decrypt(raw[name].removeprefix(SEALED_PREFIX)) == headers[name]
    # Encryption is not deterministic, so an unchanged spec must still compare unchanged.
    again = await apply_to_catalog(
        store.catalog, [declaration("shop", spec("orders", headers=headers))], T0
    )
    assert again.unchanged == ["shop", "shop/orders"]


@pytest.mark.parametrize(
    "body",
    [
        {"nested": {"list": [1, 2.5, None, True, "ü€"]}, "empty": {}},
        ["a", 1],
        "plain string",
        0,
        None,
    ],
)
async def test_json_request_bodies_round_trip(store: Store, body: object) -> None:
    await apply_to_catalog(
        store.catalog, [declaration("shop", spec("orders", method="POST", body=body))], T0
    )

    assert (await store.catalog.get_endpoint("shop/orders")).spec.body == body


async def test_a_header_stored_in_clear_reads_back_after_its_name_became_secret(
    sql_store: SqlStore,
) -> None:
    """Which names count as secret may grow; values stored in clear before must still read."""
    await apply_to_catalog(sql_store.catalog, [declaration("shop", spec("orders"))], T0)
    async with sql_store.engine.begin() as conn:
        await conn.execute(update(endpoints).values(headers={"X-Session-Id": "plain"}))

    assert (await sql_store.catalog.get_endpoint("shop/orders")).spec.headers == {
        "X-Session-Id": "plain"
    }


@pytest.mark.parametrize(
    "body",
    [10**40, -(10**20), 1.0, 100000.0, 0.5, "123", [10**40]],
    ids=repr,
)
async def test_a_body_that_is_a_number_comes_back_as_declared(store: Store, body: object) -> None:
    # SQLite used to read a JSON column's number-like text as a number of its own: 10**40 came
    # back as 1e+40 (and 1.0 as 1), so every apply of the same file said "updated".
    declared = [declaration("shop", spec("orders", method="POST", body=body))]

    await apply_to_catalog(store.catalog, declared, T0)
    again = await apply_to_catalog(store.catalog, declared, T0 + seconds(1))
    stored = (await store.catalog.get_endpoint("shop/orders")).spec.body

    assert (again.updated, again.unchanged) == ([], ["shop", "shop/orders"])
    assert (stored, type(stored)) == (body, type(body))


async def test_figures_count_the_backlog_queued_runs_and_live_hints(store: Store) -> None:
    for name in ("a", "b", "c", "d"):
        await add_endpoint(store, "shop", name, T0)
    paused = await store.catalog.get_endpoint("shop/d")
    await set_pause(store.catalog, paused.id, Pause("ops"), T0)
    # Two of a, b, c leased: one left due. The leased ones get the hints (leased, they stay
    # out of the backlog whatever the hints plan).
    first, second = await store.claims.claim_due(T0, "w1", 60, 2)
    slow = IntervalHint(600, T0 + seconds(30), "slow")
    await set_hints(store.catalog, first.endpoint.id, slow, None, T0)
    shot = OneShotHint(T0 + seconds(3000), T0 + seconds(60), "later")
    await set_hints(store.catalog, second.endpoint.id, None, shot, T0)
    manual = queued_run(
        paused,
        RunTrigger.MANUAL,
        slot_at=T0 + seconds(1),
        due_at=T0 + seconds(5),
        requested_by="cli:ann@web",
        now=T0,
    )
    await store.claims.enqueue([manual])

    assert await store.catalog.figures(T0) == CatalogFigures(due=1, queued_due=0, hints_active=2)
    assert await store.catalog.figures(T0 + seconds(45)) == CatalogFigures(
        due=1, queued_due=1, hints_active=1
    )


async def test_where_values_came_from_round_trips_and_a_change_of_it_updates(store: Store) -> None:
    headers = {"Authorization": "Bearer t0k"}
    from_file = (Reference(("headers", "Authorization"), "Bearer ${file:/run/secrets/t}"),)
    declared = spec("orders", headers=headers, references=from_file)
    await apply_to_catalog(store.catalog, [declaration("shop", declared)], T0)

    again = await apply_to_catalog(store.catalog, [declaration("shop", declared)], T0)
    moved = replace(declared, references=(replace(from_file[0], written="${env:TOKEN}"),))
    updated = await apply_to_catalog(store.catalog, [declaration("shop", moved)], T0)

    assert again.unchanged == ["shop", "shop/orders"]
    assert updated.updated == ["shop/orders"]
    assert (await store.catalog.get_endpoint("shop/orders")).spec.references == moved.references


async def test_a_jobs_budget_and_an_endpoints_objective_round_trip(store: Store) -> None:
    plain = declaration("feeds", spec("news"), spec("prices"))
    await apply_to_catalog(store.catalog, [plain], T0)
    budgeted = JobDeclaration(
        replace(plain.job, budget="600/h"), [spec("news", objective=Objective.AGE), spec("prices")]
    )

    changed = await apply_to_catalog(store.catalog, [budgeted], T0 + seconds(5))

    assert changed.updated == ["feeds", "feeds/news"]
    [job] = [j for j in await store.catalog.list_jobs() if j.name == "feeds"]
    assert job.budget == "600/h"
    news = await store.catalog.get_endpoint("feeds/news")
    assert news.spec.objective is Objective.AGE
    assert (await store.catalog.get_endpoint("feeds/prices")).spec.objective is (
        Objective.FRESHNESS
    )
