"""The history's partitions on PostgreSQL (decision 0047): one per UTC day of `slot_at`, named
`runs_pYYYYMMDD`, and the DEFAULT partition `runs_default`, which takes a run of any day that
has none (a backfill of last year, a test's fake clock), so that no run is ever refused for want
of a partition. Housekeeping creates the days ahead (`create_ahead`) and drops the days past
retention (`drop_before`): dropping a day is a change to the catalog, not a DELETE of its rows.

Each change waits at most `LOCK_TIMEOUT` for its lock (a partition's DDL locks the history
briefly): behind a long read it gives up, and the next housekeeping pass tries again, rather
than queue every claim and finish behind it.
"""

from __future__ import annotations

import re
from collections.abc import MutableMapping
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from cronpilot.adapters.sql.engine import Database

DEFAULT_PARTITION = "runs_default"
DAYS_AHEAD = 7
"""Days created ahead of today: a week of slack should housekeeping stop for a while."""
LOCK_TIMEOUT = "2s"
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


async def _change(db: Database, day: date, statements: list[str], *, present: bool) -> bool:
    """Run `statements` if the day's partition is (`present`) or is not there, checked under
    a lock all workers' housekeeping takes (so two workers never make or drop one day both);
    whether they ran."""
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
