"""Migration 0026 on a database with runs in it: the unfinished ones move to the queue, the
finished ones stay as history (on PostgreSQL in their days' partitions), and nothing is lost."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from alembic import command
from sqlalchemy import Connection, insert, inspect, text

from cronpilot.adapters.sql import open_sql_store, upgrade_database
from cronpilot.adapters.sql.engine import create_engine
from cronpilot.adapters.sql.migrate import alembic_config
from cronpilot.adapters.sql.rows import endpoint_values, job_values
from cronpilot.adapters.sql.run_rows import run_values
from cronpilot.adapters.sql.tables import endpoints, jobs, runs
from cronpilot.domain.model import (
    Endpoint,
    EndpointSpec,
    Job,
    Run,
    RunStatus,
    RunTrigger,
    Schedule,
    ScheduleSource,
    new_id,
)
from cronpilot.domain.ports import SecretCipher

NOW = datetime.now(UTC).replace(microsecond=0)
"""Real time: the migration partitions the days around the real today."""
_STATUSES = [RunStatus.SUCCESS, RunStatus.FAILED, RunStatus.QUEUED, RunStatus.RUNNING]


def _to_0025(connection: Connection) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    command.upgrade(config, "0025")


def _as_of_0025(connection: Connection, table: str, values: dict[str, object]) -> dict[str, object]:
    """`values` less the columns that later migrations added: the rows are written as 0025 had
    them."""
    columns = {column["name"] for column in inspect(connection).get_columns(table)}
    return {name: value for name, value in values.items() if name in columns}


def _runs(endpoint: Endpoint) -> list[Run]:
    """A run a day for the 40 days before now (well inside the 400 days the migration
    partitions), one of 500 days ago (into the DEFAULT partition), one queued and one
    running."""
    made = []
    slots = [NOW - timedelta(days=days) for days in (*range(40, 0, -1), 500)]
    for n, slot in enumerate(slots):
        made.append(_run(endpoint, slot, _STATUSES[n % 2]))
    made.append(_run(endpoint, NOW, RunStatus.QUEUED))
    made.append(_run(endpoint, NOW + timedelta(minutes=1), RunStatus.RUNNING))
    return made


def _run(endpoint: Endpoint, slot: object, status: RunStatus) -> Run:
    assert slot is not None
    return Run(
        id=new_id(),
        endpoint_id=endpoint.id,
        job_id=endpoint.job_id,
        trace_id=new_id(),
        parent_trace_id=None,
        trigger=RunTrigger.MANUAL if status is RunStatus.QUEUED else RunTrigger.SCHEDULE,
        schedule_source=ScheduleSource.BASELINE,
        status=status,
        slot_at=slot,  # type: ignore[arg-type]
        started_at=slot,  # type: ignore[arg-type]
        worker_id="w1",
        attempt=1,
        finished_at=slot if status.finished else None,  # type: ignore[arg-type]
        status_code=200 if status.finished else None,
        body={"n": 1} if status.finished else None,
        due_at=slot if status is RunStatus.QUEUED else None,  # type: ignore[arg-type]
    )


async def _migrate_with_runs(url: str, fresh: bool) -> list[Run]:
    engine = create_engine(url)
    job = Job("legacy")
    spec = EndpointSpec(
        name="e", url="http://127.0.0.1:9/e", schedule=Schedule(interval_seconds=60)
    )
    endpoint = replace(Endpoint(new_id(), job.id, job.name, spec), next_run_at=NOW + timedelta(1))
    try:
        async with engine.begin() as conn:
            if not fresh:
                await conn.execute(text("DROP SCHEMA public CASCADE"))
                await conn.execute(text("CREATE SCHEMA public"))
            await conn.run_sync(_to_0025)
        made = _runs(endpoint)
        async with engine.begin() as conn:
            job_row = job_values(job)
            await conn.execute(
                insert(jobs).values(
                    await conn.run_sync(lambda sync: _as_of_0025(sync, "jobs", job_row))
                )
            )
            row = endpoint_values(endpoint, None)
            await conn.execute(
                insert(endpoints).values(
                    await conn.run_sync(lambda sync: _as_of_0025(sync, "endpoints", row))
                )
            )
            history = [
                await conn.run_sync(
                    lambda sync, run=run: _as_of_0025(sync, "runs", run_values(run))
                )
                for run in made
            ]
            await conn.execute(insert(runs.metadata.tables["runs"]), history)
    finally:
        await engine.dispose()
    upgrade = await upgrade_database(url)
    assert upgrade.before == "0025"
    assert upgrade.after is not None
    assert upgrade.after >= "0026"
    return made


async def _check(url: str, cipher: SecretCipher, made: list[Run]) -> None:
    store = await open_sql_store(url, cipher)
    try:
        endpoint_id = made[0].endpoint_id
        listed = await store.runs.list_runs(endpoint_id, limit=100)
        assert sorted(run.id for run in listed) == sorted(run.id for run in made)
        assert {run.id: run.status for run in listed} == {run.id: run.status for run in made}
        async with store.engine.connect() as conn:
            queue = (await conn.execute(text("SELECT id FROM run_queue"))).scalars().all()
        assert sorted(queue) == sorted(run.id for run in made if not run.status.finished)
        # The queued run is claimed as before the migration; the finished ones stay.
        claims = await store.claims.claim_due(NOW, "w2", 60, 10)
        assert [claim.run_id for claim in claims] == [made[-2].id]
    finally:
        await store.close()


async def test_sqlite_keeps_every_run_across_0026(tmp_path: object, cipher: SecretCipher) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path}/legacy.db"
    made = await _migrate_with_runs(url, fresh=True)
    await _check(url, cipher, made)


async def test_postgres_partitions_the_history_it_had(
    postgres_url: str, cipher: SecretCipher
) -> None:
    made = await _migrate_with_runs(postgres_url, fresh=False)
    await _check(postgres_url, cipher, made)
    engine = create_engine(postgres_url)
    try:
        async with engine.connect() as conn:
            placed = dict(
                (await conn.execute(text("SELECT id, tableoid::regclass::text FROM runs"))).all()
            )
    finally:
        await engine.dispose()
    finished = [run for run in made if run.status.finished]
    assert set(placed) == {run.id for run in finished}
    for run in finished:
        day = f"runs_p{run.slot_at:%Y%m%d}"
        old = run.slot_at < NOW - timedelta(days=401)
        assert placed[run.id] == ("runs_default" if old else day), (run.slot_at, placed[run.id])
