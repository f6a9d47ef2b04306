"""The worker's group commit (`scheduler.recorder`), around stores that fail in ways no real one
is asked to."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import cast

import pytest

from cronpilot.domain.errors import CronpilotError, LeaseLost, StoreUnavailable
from cronpilot.domain.model import (
    Claim,
    Endpoint,
    EndpointSpec,
    Finish,
    Recorded,
    Response,
    Run,
    Schedule,
    ScheduleSource,
)
from cronpilot.domain.ports import ClaimRepository
from cronpilot.scheduler.recorder import Recorder
from tests.support.side_tasks import running

NOW = datetime(2030, 1, 1, tzinfo=UTC)


class Recording:
    """`finish_many` that answers each batch with `answer` (or raises it), and keeps the batches."""

    def __init__(self, answer: Exception | None = None) -> None:
        self.answer = answer
        self.batches: list[list[str]] = []

    async def finish_many(self, finishes: Sequence[Finish]) -> list[Recorded | CronpilotError]:
        self.batches.append([finish.claim.run_id for finish in finishes])
        await asyncio.sleep(0)
        if self.answer is not None:
            raise self.answer
        return [
            LeaseLost(f.claim.endpoint.id, f.worker_id) if f.claim.run_id == "run-lost" else _ok(f)
            for f in finishes
        ]


def _ok(finish: Finish) -> Recorded:
    # The run stands for itself by its id: the recorder hands it on untouched.
    return Recorded(cast(Run, finish.claim.run_id), [])


def _finish(name: str) -> Finish:
    spec = EndpointSpec(name, f"https://example.com/{name}", Schedule(interval_seconds=60))
    endpoint = Endpoint(id=name, job_id="j", job_name="j", spec=spec, next_run_at=NOW)
    claim = Claim(endpoint, f"run-{name}", NOW, f"trace-{name}", NOW, ScheduleSource.BASELINE)
    return Finish(claim, "w1", Response(200), NOW, 60)


async def test_finishes_arriving_together_share_one_call_and_each_gets_its_own_outcome() -> None:
    store = Recording()
    recorder = Recorder(cast(ClaimRepository, store))

    async with running(recorder), asyncio.timeout(5):
        outcomes = await asyncio.gather(
            *(recorder.record(_finish(name)) for name in ("a", "lost", "b")),
            return_exceptions=True,
        )

    assert store.batches == [["run-a", "run-lost", "run-b"]]
    assert outcomes[0] == Recorded(cast(Run, "run-a"), [])
    assert isinstance(outcomes[1], LeaseLost)
    assert outcomes[2] == Recorded(cast(Run, "run-b"), [])


async def test_a_batch_is_cut_at_its_limit_and_the_rest_goes_in_the_next_call() -> None:
    store = Recording()
    recorder = Recorder(cast(ClaimRepository, store), max_batch=2)

    async with running(recorder), asyncio.timeout(5):
        await asyncio.gather(*(recorder.record(_finish(name)) for name in "abc"))

    assert store.batches == [["run-a", "run-b"], ["run-c"]]


@pytest.mark.parametrize(
    "error", [StoreUnavailable("database down"), RuntimeError("a bug in the recording code")]
)
async def test_an_error_of_the_whole_call_reaches_every_waiting_caller_instead_of_hanging_them(
    error: Exception,
) -> None:
    store = Recording(error)
    recorder = Recorder(cast(ClaimRepository, store))

    async with running(recorder):
        async with asyncio.timeout(5):
            outcomes = await asyncio.gather(
                *(recorder.record(_finish(name)) for name in "abc"), return_exceptions=True
            )

        assert outcomes == [error] * 3
        assert len(store.batches) == 1
        with pytest.raises(type(error)):
            async with asyncio.timeout(5):
                await recorder.record(_finish("d"))


async def test_a_stopping_recorder_records_what_is_queued_before_it_returns() -> None:
    store = Held()
    recorder = Recorder(cast(ClaimRepository, store))
    stop = asyncio.Event()
    flusher = asyncio.create_task(recorder.run(stop))
    callers = [asyncio.create_task(recorder.record(_finish(name))) for name in "ab"]
    await asyncio.sleep(0)

    stop.set()
    store.go.set()
    async with asyncio.timeout(5):
        await flusher
        outcomes = await asyncio.gather(*callers)

    assert store.batches == [["run-a", "run-b"]]
    assert outcomes == [_ok(_finish("a")), _ok(_finish("b"))]


class Held(Recording):
    """`finish_many` that waits for `go` before each batch."""

    def __init__(self) -> None:
        super().__init__()
        self.go = asyncio.Event()

    async def finish_many(self, finishes: Sequence[Finish]) -> list[Recorded | CronpilotError]:
        await self.go.wait()
        return await super().finish_many(finishes)


@pytest.mark.parametrize("started", [True, False])
async def test_a_cancelled_flusher_records_nothing_later_that_its_callers_were_told_cancelled(
    started: bool,
) -> None:
    store = Held()
    recorder = Recorder(cast(ClaimRepository, store))
    flusher = asyncio.create_task(recorder.run(asyncio.Event()))
    # A turn: the flusher waits for finishes.
    await asyncio.sleep(0)
    callers = [asyncio.create_task(recorder.record(_finish("a")))]
    if started:
        # Two turns: the caller queues its finish, the flusher takes it into the store.
        await asyncio.sleep(0)
        await asyncio.sleep(0)
    callers += [asyncio.create_task(recorder.record(_finish(name))) for name in "bc"]
    await asyncio.sleep(0)

    flusher.cancel()
    async with asyncio.timeout(5):
        outcomes = await asyncio.gather(*callers, return_exceptions=True)
        store.go.set()
        async with running(recorder):
            recorded = await recorder.record(_finish("d"))

    assert [type(outcome) for outcome in outcomes] == [asyncio.CancelledError] * 3
    assert store.batches == [["run-d"]]
    assert recorded == Recorded(cast(Run, "run-d"), [])
