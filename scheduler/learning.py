"""Learning from recorded runs, off the hot path: when to learn output schemas
(`usecases.schema_learning`), refresh provides edges and record the edges DAG traces show
(`usecases.graph_edges`). The use cases do the reading and writing; this module decides when.

The worker hands each recorded run to `observe`, which merges its body, still in memory,
into the schema kept for its endpoint (`scheduler.kept_schemas`) and returns: most runs answer
the shape already learnt, and cost no read and no write then. A change of shape (or of the
fields found volatile) is saved at once by a background task; the counts the other runs add
are saved at most every `SAVE_COUNTS_SECONDS`. An endpoint whose kept schema lacks runs
(recorded by another worker, or before this one started) is learnt from the store by that
task, from the schema's watermark. Nothing is lost when the queue overflows or a worker dies:
a schema remembers the newest slot it has merged, so the next learning of the endpoint from
the store (or `schema backfill`) catches up on everything stored since.

A job's provides edges are computed from every learnt schema of the job, so they are not
refreshed on each first body or change of shape: the job is marked, and marked jobs are
refreshed together once no shape has changed for `REFRESH_SECONDS`, or `MAX_REFRESH_LAG`
after the first mark while shapes keep changing (and by `refresh_stale`, `idle`, `stop`). A
burst of first bodies in a job of N endpoints costs a few refreshes, not N (N² schema reads).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from datetime import datetime, timedelta

from cronpilot.domain.errors import CronpilotError
from cronpilot.domain.graph.outputs import OutputSchema
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.model import Endpoint, Run
from cronpilot.domain.ports.clock import Clock
from cronpilot.domain.ports.search import Embedder
from cronpilot.domain.ports.telemetry import Telemetry
from cronpilot.domain.ports.units import ReadingFactory, UnitOfWorkFactory
from cronpilot.domain.runs.outage import described
from cronpilot.domain.runs.telemetry import NO_TELEMETRY
from cronpilot.runtime.timing import Periodic
from cronpilot.scheduler.kept_schemas import KeptSchemas, Merged
from cronpilot.usecases.graph_edges import record_trace, refresh_job_provides
from cronpilot.usecases.schema_learning import learn_schema, save_learnt
from cronpilot.usecases.search import refresh_vectors

log = logging.getLogger(__name__)

QUEUE_SIZE = 10_000
LEARN_EVERY_SECONDS = 10.0
"""An endpoint's schema is learnt from the store at most this often. Runs recorded meanwhile
wait and are merged together, read from the watermark: an endpoint called every second costs
one learning step (two reads and a write) per ten runs instead of one per run."""
SAVE_COUNTS_SECONDS = 300.0
"""How often the counts merged in memory (fields seen, values changed) are saved when the
shape did not change: an endpoint called every minute writes its schema every five runs, not
every run. Shapes are saved at once."""
LEARN_SHARE = 1 / 3
"""The learner takes at most this share of the time: after each step it rests twice as long
as the step took, so that a burst of calls keeps the worker's attention; what is observed
meanwhile waits in the queue (and, past its size, for the endpoint's next run)."""
REFRESH_SECONDS = 5.0
"""How long the learner waits for more changes of shape before refreshing provides edges."""
MAX_REFRESH_LAG = 60.0
"""How long provides edges may lag behind the schemas they come from while shapes keep
changing (longer for jobs whose refresh takes more than a tenth of that)."""


class RunLearner:
    """Learns from the runs a scheduler worker records: their endpoints' output schemas, their
    jobs' provides edges, and the edges of DAG traces."""

    def __init__(
        self,
        uow: UnitOfWorkFactory,
        reading: ReadingFactory,
        clock: Clock,
        *,
        queue_size: int = QUEUE_SIZE,
        refresh_seconds: float = REFRESH_SECONDS,
        learn_every_seconds: float = LEARN_EVERY_SECONDS,
        telemetry: Telemetry = NO_TELEMETRY,
        embedder: Embedder | None = None,
    ) -> None:
        self._uow = uow
        self._embedder = embedder
        """Keeps the search vectors of a reshaped job in step (None: the next search does)."""
        self._telemetry = telemetry
        self._reading = reading
        self._clock = clock
        self._learn_every = timedelta(seconds=learn_every_seconds)
        self._learnt_at: dict[str, datetime] = {}
        """When each endpoint learnt within the last `learn_every_seconds` was last learnt."""
        self._held: dict[str, Endpoint] = {}
        """Endpoints with runs observed since then, learnt once their turn comes."""
        self._learning_held = asyncio.Lock()
        """One pass over the held endpoints at a time: `idle` waits for one under way."""
        self._queue: asyncio.Queue[tuple[Endpoint, Run | None]] = asyncio.Queue(queue_size)
        """An endpoint to learn, with the run when a DAG trace is to be recorded from it."""
        self._queued: set[str] = set()
        """Endpoints in the queue: one entry saves a change of shape or learns every run stored
        since the watermark, so another would only hold memory (and slow every garbage
        collection)."""
        self._kept = KeptSchemas()
        self._from_store: set[str] = set()
        """Endpoints whose kept schema lacks runs: their entry learns from the store."""
        self._counts_saved_at: datetime = clock.now()
        self._refresh_seconds = refresh_seconds
        self._stale: set[str] = set()
        """Jobs whose provides edges are older than one of their schemas."""
        self._first_marked: datetime | None = None
        self._last_marked: datetime | None = None
        self._refreshing = asyncio.Lock()
        self._step_took = 0.0
        """How long the last learning step took (not counting the wait for it)."""
        self._refresh_took = 0.0
        """How long the last provides refresh took (0 when none was due)."""
        rest = 1 / LEARN_SHARE - 1
        self._consumer = Periodic(
            "learning", clock, 0.0, self._consume_one, cut=True, rest=lambda: self._step_took * rest
        )
        every = learn_every_seconds / 2
        self._held_timer = Periodic(
            "learning held endpoints",
            clock,
            every,
            self._learn_held_now,
            first_after=every,
            cut=True,
        )
        # Slow refreshes (jobs of thousands of endpoints) come less often: at most a tenth of
        # the time goes into them.
        self._refresh_timer = Periodic(
            "provides refresh",
            clock,
            refresh_seconds,
            self._refresh_if_due,
            first_after=refresh_seconds,
            rest=lambda: 9 * self._refresh_took,
        )

    def observe(self, endpoint: Endpoint, run: Run) -> None:
        traced = run.parent_trace_id is not None
        merged = self._merge(endpoint, run)
        if merged is Merged.FROM_STORE:
            self._from_store.add(endpoint.id)
        if not traced and (merged is Merged.NOTHING or endpoint.id in self._queued):
            return
        with contextlib.suppress(asyncio.QueueFull):
            # Dropped: a change of shape is saved with the counts; runs to learn from the
            # store are learnt with the endpoint's next run, from the watermark.
            self._queue.put_nowait((endpoint, run if traced else None))
            self._queued.add(endpoint.id)

    def _merge(self, endpoint: Endpoint, run: Run) -> Merged:
        """Merge the run into the schema kept for its endpoint. A bug in inference is logged,
        not raised into the worker's slot, and the half-merged schema forgotten."""
        with _failure_logged(endpoint):
            try:
                return self._kept.merge(endpoint, run, self._clock.now())
            except Exception:
                self._kept.forget(endpoint.id)
                raise
        return Merged.NOTHING

    async def run(self, stop: asyncio.Event) -> None:
        """Learn until `stop` is set, then refresh what was learnt since the last refresh: a
        job whose schemas settled would otherwise keep stale edges for good. Endpoints held for
        their turn are not learnt then, which could hold a stopping worker for seconds: their
        runs stay stored, and their next learning (or `schema backfill`) reads them. A refresh
        under way is let finish (cut short, it would forget the jobs it had taken)."""
        async with asyncio.TaskGroup() as timers:
            for timer in (self._consumer, self._held_timer, self._refresh_timer):
                timers.create_task(timer.run(stop))
        await self.refresh_stale()

    async def idle(self) -> None:
        """Wait until everything observed so far has been learnt, and the provides edges it
        changed recorded."""
        await self._queue.join()
        await self._learn_held(self._clock.now() + self._learn_every)
        await self._save_counts()
        await self.refresh_stale()

    async def _consume_one(self) -> bool:
        """Save the next endpoint's change of shape, or learn it from the store, and record
        its run's trace (waiting for one); True: take the next."""
        endpoint, run = await self._queue.get()
        self._queued.discard(endpoint.id)
        started = self._clock.now()
        try:
            with _failure_logged(endpoint):
                if endpoint.id in self._from_store:
                    self._from_store.discard(endpoint.id)
                    await self._learn_in_turn(endpoint)
                else:
                    await self._save(endpoint.id, due_only=True)
                if run is not None:
                    await self.trace(run)
        finally:
            self._queue.task_done()
            self._step_took = (self._clock.now() - started).total_seconds()
        return True

    async def _learn_in_turn(self, endpoint: Endpoint) -> None:
        """Learn now, unless the endpoint was learnt less than `learn_every_seconds` ago: then
        hold it until its turn (its runs stay stored; the watermark finds them)."""
        now = self._clock.now()
        last = self._learnt_at.get(endpoint.id)
        if last is not None and now - last < self._learn_every:
            self._held[endpoint.id] = endpoint
            return
        self._learnt_at[endpoint.id] = now
        self._held.pop(endpoint.id, None)
        await self.learn(endpoint)

    async def _learn_held_now(self) -> bool:
        await self._learn_held(self._clock.now())
        now = self._clock.now()
        if (now - self._counts_saved_at).total_seconds() >= SAVE_COUNTS_SECONDS:
            self._counts_saved_at = now
            await self._save_counts()
        return False

    async def _save_counts(self) -> None:
        """Save every kept schema with merges not saved yet."""
        for endpoint_id in self._kept.unsaved():
            kept = self._kept.get(endpoint_id)
            if kept is not None:
                with _failure_logged(kept.endpoint):
                    await self._save(endpoint_id, due_only=False)

    async def _save(self, endpoint_id: str, *, due_only: bool) -> None:
        """Save the schema kept for the endpoint, as merged so far (a copy: runs handed over
        meanwhile are merged into the kept one, saved next time). Another writer having saved
        it since, the kept one is forgotten and the endpoint learnt from the store in its
        turn."""
        kept = self._kept.get(endpoint_id)
        if kept is None or not kept.unsaved or (due_only and not kept.due):
            return
        saving, drift, reshaped = kept.schema.copy(), kept.drift, kept.reshaped
        kept.drift, kept.reshaped, kept.due, kept.unsaved = [], False, False, False
        now = self._clock.now()
        self._learnt_at[endpoint_id] = now
        try:
            saved = await save_learnt(self._uow, kept.endpoint, saving, drift, now)
        except BaseException:
            # What was taken out to save is gone with it: the store catches up instead.
            self._kept.forget(endpoint_id)
            raise
        if not saved:
            self._kept.forget(endpoint_id)
            await self._learn_in_turn(kept.endpoint)
            return
        kept.schema.version = saving.version
        if drift:
            self._telemetry.drifted(kept.endpoint, len(drift))
        if reshaped:
            self._mark_stale(kept.endpoint.job_name)

    async def _learn_held(self, now: datetime) -> None:
        """Learn every held endpoint whose turn has come by `now`, and forget the learning
        times that hold nothing back any more."""
        async with self._learning_held:
            since = now - self._learn_every
            self._learnt_at = {key: at for key, at in self._learnt_at.items() if at > since}
            for endpoint_id, endpoint in list(self._held.items()):
                if endpoint_id in self._learnt_at:
                    continue
                del self._held[endpoint_id]
                self._learnt_at[endpoint_id] = self._clock.now()
                with _failure_logged(endpoint):
                    await self.learn(endpoint)

    async def _refresh_if_due(self) -> bool:
        self._refresh_took = 0.0
        if self._refresh_due():
            started = self._clock.now()
            await self.refresh_stale()
            self._refresh_took = (self._clock.now() - started).total_seconds()
        return False

    def _refresh_due(self) -> bool:
        """A change of shape is waiting, and the burst it came in is over or has gone on too
        long: a burst of first bodies (thousands of endpoints of one job) is one refresh."""
        if self._first_marked is None or self._last_marked is None:
            return False
        now = self._clock.now()
        quiet = (now - self._last_marked).total_seconds() >= self._refresh_seconds
        return quiet or (now - self._first_marked).total_seconds() >= MAX_REFRESH_LAG

    def _mark_stale(self, job: str) -> None:
        self._stale.add(job)
        self._last_marked = self._clock.now()
        self._first_marked = self._first_marked or self._last_marked

    async def learn(self, endpoint: Endpoint) -> OutputSchema:
        """Merge the endpoint's runs stored since its schema's watermark; on a change of shape
        (or the first body), mark its job's provides edges stale."""
        learnt = await learn_schema(self._uow, self._reading, endpoint, self._clock.now())
        self._kept.keep(endpoint, learnt.schema.copy())
        if learnt.drift_events:
            self._telemetry.drifted(endpoint, learnt.drift_events)
        if learnt.reshaped:
            self._mark_stale(endpoint.job_name)
        return learnt.schema

    async def refresh_stale(self) -> None:
        """Refresh the provides edges of every job marked stale, once each. One refresh at a
        time: `idle` returns only when one already under way has finished too."""
        async with self._refreshing:
            jobs, self._stale = self._stale, set()
            self._first_marked = self._last_marked = None
            for job in sorted(jobs):
                try:
                    await refresh_job_provides(self._uow, job, self._clock.now())
                except CronpilotError as error:
                    log.warning(
                        "could not refresh the provides edges of job %s (%s)",
                        job,
                        described(error),
                        extra=log_extra("refresh_provides_failed", job=job),
                    )
                await self._refresh_vectors(job)

    async def _refresh_vectors(self, job: str) -> None:
        """A learnt field is indexed text: the job's vectors that a search made follow it.
        Only on a change of shape (rare once a schema settles), never per run; a failure
        leaves them stale for the next search to embed."""
        if self._embedder is None:
            return
        try:
            await refresh_vectors(self._reading, self._uow, self._embedder, self._clock.now(), job)
        except CronpilotError as error:
            log.warning(
                "could not refresh the search vectors of job %s (%s)",
                job,
                described(error),
                extra=log_extra("refresh_vectors_failed", job=job),
            )

    async def trace(self, run: Run) -> None:
        """Record what a child run shows: parent → it, and the sibling sequence."""
        await record_trace(self._uow, self._reading, run, self._clock.now())


@contextlib.contextmanager
def _failure_logged(endpoint: Endpoint) -> Iterator[None]:
    """An error while learning is logged, not raised: the learner's tasks go on with the next
    endpoint, and this one catches up from its watermark next time."""
    try:
        yield
    except CronpilotError as error:
        log.warning(
            "could not learn from %s (%s)",
            endpoint.ref,
            described(error),
            extra=log_extra("learn_failed", endpoint_id=endpoint.id),
        )
    except Exception:
        # A bug (in inference, say) must not end learning for every endpoint of the worker.
        log.exception(
            "learning from %s failed",
            endpoint.ref,
            extra=log_extra("internal_error", endpoint_id=endpoint.id),
        )
