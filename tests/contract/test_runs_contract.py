"""RunRepository contract, run on every store (memory, SQLite, PostgreSQL)."""

from __future__ import annotations

from datetime import datetime

import pytest

from cronpilot.domain.errors import RunNotFound
from cronpilot.domain.model import ErrorKind, Pause, Response, Run, RunStatus, SentRequest
from cronpilot.domain.ports import Store
from tests.contract.builders import T0, add_endpoint, claim_one, run_once, seconds
from tests.support.scheduling import set_pause


async def _history(store: Store, endpoint_id: str, count: int) -> list[Run]:
    """`count` finished runs of one interval endpoint, one per slot, oldest first; then the
    endpoint is paused so that it stays out of later claims."""
    done = []
    for n in range(count):
        now = T0 + seconds(60 * n)
        done.append(await run_once(store, now, Response(status_code=200, body={"n": n})))
        assert (await store.catalog.get_endpoint(endpoint_id)).next_run_at == now + seconds(60)
    await set_pause(store.catalog, endpoint_id, Pause("history written"), T0)
    return done


async def test_list_runs_newest_first_with_paging(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "e", T0)
    done = await _history(store, endpoint_id, 5)

    newest_first = list(reversed(done))
    assert await store.runs.list_runs(endpoint_id) == newest_first
    assert await store.runs.list_runs(endpoint_id, limit=2, offset=1) == newest_first[1:3]
    assert await store.runs.list_runs("0" * 32) == []


async def test_get_run(store: Store) -> None:
    await add_endpoint(store, "j", "e", T0)
    run = await run_once(store, T0)

    assert await store.runs.get_run(run.id) == run
    with pytest.raises(RunNotFound):
        await store.runs.get_run("0" * 32)


async def test_latest_runs_include_running_ones(store: Store) -> None:
    done_id = await add_endpoint(store, "j", "done", T0)
    await _history(store, done_id, 2)
    busy_id = await add_endpoint(store, "j", "busy", T0 + seconds(500))
    idle_id = await add_endpoint(store, "j", "idle", T0 + seconds(900))
    busy = await claim_one(store, T0 + seconds(500))

    latest = await store.runs.latest_runs([done_id, busy_id, idle_id])

    assert set(latest) == {done_id, busy_id}
    assert latest[done_id].slot_at == T0 + seconds(60)
    assert (latest[busy_id].id, latest[busy_id].status) == (busy.run_id, RunStatus.RUNNING)
    assert await store.runs.latest_runs([]) == {}


async def test_prune_keeps_the_newest_per_endpoint_and_every_running_run(store: Store) -> None:
    first = await add_endpoint(store, "j", "first", T0)
    first_runs = await _history(store, first, 4)
    second = await add_endpoint(store, "j", "second", T0 + seconds(1000))
    second_run = await run_once(store, T0 + seconds(1000))
    running = await claim_one(store, T0 + seconds(1060))

    assert await store.runs.prune(keep_per_endpoint=2) == 2

    assert await store.runs.list_runs(first) == [first_runs[3], first_runs[2]]
    slots: list[datetime] = [r.slot_at for r in await store.runs.list_runs(second)]
    assert slots == [running.slot_at, second_run.slot_at]
    assert await store.runs.prune(keep_per_endpoint=0) == 3
    assert [r.id for r in await store.runs.list_runs(second)] == [running.run_id]


@pytest.mark.parametrize("body", [10**40, 1.0], ids=repr)
async def test_a_response_that_is_a_number_is_kept_exactly(store: Store, body: object) -> None:
    await add_endpoint(store, "j", "e", T0)

    run = await run_once(store, T0, Response(status_code=200, body=body))

    stored = (await store.runs.get_run(run.id)).body
    assert (stored, type(stored)) == (body, type(body))


async def test_a_run_keeps_the_request_it_sent(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "e", T0)
    sent = SentRequest(
        method="POST",
        url="https://example.com/e?token=****",
        headers={"Authorization": "****", "X-Cronpilot-Run-Id": "r1"},
        body='{"n":1}',
    )
    run = await run_once(store, T0, Response(status_code=200, body={"ok": 1}, request=sent))

    assert run.request == sent
    assert (await store.runs.get_run(run.id)).request == sent
    [listed] = await store.runs.list_runs(endpoint_id)
    assert listed.request == sent


async def test_a_run_that_sent_nothing_has_no_request(store: Store) -> None:
    await add_endpoint(store, "j", "e", T0)
    run = await run_once(store, T0, Response(status_code=None, error_kind=ErrorKind.TEMPLATE))

    assert (await store.runs.get_run(run.id)).request is None
