"""The history's partitions on PostgreSQL (decision 0047): one per UTC day of `slot_at`, named
`runs_pYYYYMMDD`, and the DEFAULT partition `runs_default`, which takes a run of any day that
has none (a backfill of last year, a test's fake clock), so that no run is ever refused for want
of a partition. Housekeeping creates the days ahead (`create_ahead`) and drops the days past
retention (`drop_before`): dropping a day is a change to the catalog, not a DELETE of its rows.

Each change waits at most `LOCK_TIMEOUT` for each lock it takes (a partition's DDL locks the
history briefly), and gives way when it waits longer: it rolls back and tries again a little
later, `ATTEMPTS` times, then leaves the day to the next housekeeping pass. The wait is shorter
than PostgreSQL's `deadlock_timeout` (1 s by default), so where a lock the change waits for
closes a cycle with a worker's transaction, the change gives way before the deadlock detector
picks a victim: a claim or a finish is never the one aborted, and none queues behind the change
for longer than the wait.
"""

from __future__ import annotations

import re
from collections.abc import MutableMapping
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from cronpilot.adapters.sql.engine import Database, sqlstate_of
from cronpilot.domain.errors import CronpilotError

DEFAULT_PARTITION = "runs_default"
DAYS_AHEAD = 7
"""Days created ahead of today: a week of slack should housekeeping stop for a while."""
LOCK_TIMEOUT = "200ms"
ATTEMPTS = 10
RETRY_SECONDS = 0.1
"""The pause after a first attempt gave way, longer by as much after each next one (4.5 s in
all, beside the attempts' own waits)."""
_GAVE_WAY = frozenset({"55P03", "40P01"})
"""SQLSTATEs of a lock not had in time (`lock_timeout`) and of a deadlock."""
_DAY = re.compile(r"runs_p(\d{8})")
_HELD = text("SELECT EXISTS (SELECT 1 FROM pg_class WHERE relname = :name)")
_SERIALISED = text("SELECT pg_advisory_xact_lock(hashtext('cronpilot.partitions'))")
_LISTED = text(
    "SELECT c.relname, c.reltuples FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
    "WHERE i.inhparent = 'runs'::regclass"
)


def partition_name(day: date) -> str:
    return f"runs_p{day:%Y%m%d}"


def is_partition(name: str) -> bool:
    """Whether a table is one of the history's partitions (not in the tables' metadata)."""
    return name == DEFAULT_PARTITION or _DAY.fullmatch(name) is not None


def outside_partitions(name: str | None, kind: str, parents: MutableMapping[Any, Any]) -> bool:
    """Alembic's `include_name`: every name but the history's partitions'."""
    return not (kind == "table" and name is not None and is_partition(name))


def day_bounds(day: date) -> tuple[str, str]:
    """The instants a day's partition holds, [start, end), as timestamptz literals."""
    start = datetime.combine(day, time(), UTC)
    return start.isoformat(), (start + timedelta(days=1)).isoformat()


def attach_statements(day: date) -> list[str]:
    """A day's partition, created beside the history and attached: the rows the DEFAULT
    partition holds of that day move into it first (attaching checks that none is left)."""
    name = partition_name(day)
    start, end = day_bounds(day)
    return [
        # Writers of the history wait until the day is attached: one that chose a partition for
        # its run before (the DEFAULT) would then be refused by the DEFAULT's new bounds (a CI
        # failure once). Reads go on.
        "LOCK TABLE runs IN SHARE ROW EXCLUSIVE MODE",
        f"CREATE TABLE {name} (LIKE runs INCLUDING DEFAULTS INCLUDING CONSTRAINTS)",
        f"WITH moved AS (DELETE FROM {DEFAULT_PARTITION} WHERE slot_at >= '{start}' "
        f"AND slot_at < '{end}' RETURNING *) INSERT INTO {name} SELECT * FROM moved",
        f"ALTER TABLE runs ATTACH PARTITION {name} FOR VALUES FROM ('{start}') TO ('{end}')",
    ]


async def _days(conn: AsyncConnection) -> dict[date, float]:
    """The days that have a partition, with the rows PostgreSQL estimates each holds."""
    days: dict[date, float] = {}
    for name, rows in await conn.execute(_LISTED):
        found = _DAY.fullmatch(name)
        if found is not None:
            days[datetime.strptime(found[1], "%Y%m%d").date()] = max(float(rows), 0.0)
    return days


def _gave_way(error: BaseException) -> bool:
    """Whether a change failed for a lock it did not get in time (module note): the store's
    error, translated from the driver's (`engine.translate_driver_errors`)."""
    cause = error.__cause__
    if not isinstance(error, CronpilotError) or cause is None:
        return False
    return sqlstate_of(cause) in _GAVE_WAY


async def _change(db: Database, day: date, statements: list[str], *, present: bool) -> bool:
    """Run `statements` if the day's partition is (`present`) or is not there, checked under
    a lock all workers' housekeeping takes (so two workers never make or drop one day both);
    whether they ran. A change that gives way to the workers tries again (module note)."""
    # Imported here: only PostgreSQL's housekeeping changes partitions, and the runs' store
    # that imports this module serves every read command (tests/e2e/test_cli_startup.py).
    from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_incrementing

    retrying = AsyncRetrying(
        retry=retry_if_exception(_gave_way),
        stop=stop_after_attempt(ATTEMPTS),
        wait=wait_incrementing(RETRY_SECONDS, RETRY_SECONDS),
        reraise=True,
    )
    return await retrying(_change_once, db, day, statements, present=present)


async def _change_once(db: Database, day: date, statements: list[str], *, present: bool) -> bool:
    async with db.write() as conn:
        await conn.execute(text(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'"))
        await conn.execute(_SERIALISED)
        # The catalog itself, read afresh: `to_regclass` may answer from a cache the lock
        # above does not refresh.
        found = await conn.execute(_HELD, {"name": partition_name(day)})
        if found.scalar_one() != present:
            return False
        for statement in statements:
            await conn.execute(text(statement))
        return True


async def create_ahead(db: Database, today: date, days: int = DAYS_AHEAD) -> list[str]:
    """Create the partitions of `today` and the `days - 1` days after it that are missing;
    their names."""
    async with db.read() as conn:
        held = await _days(conn)
    created = []
    for day in (today + timedelta(days=n) for n in range(days)):
        if day not in held and await _change(db, day, attach_statements(day), present=False):
            created.append(partition_name(day))
    return created


async def drop_before(db: Database, cutoff: date) -> tuple[int, int]:
    """Drop the partitions of the days before `cutoff`; how many, and the runs they held (as
    PostgreSQL last estimated them: counting would read every row dropped)."""
    async with db.read() as conn:
        held = await _days(conn)
    doomed = [
        day
        for day in sorted(day for day in held if day < cutoff)
        if await _change(db, day, [f"DROP TABLE {partition_name(day)}"], present=True)
    ]
    return len(doomed), round(sum(held[day] for day in doomed))
