"""Readiness checks, for Kubernetes probes on workers and the API (decision 0018): the database
answers, its schema is at the newest migration, and each worker loop of the process went round
recently. Liveness needs no check: a process that answers is alive.

Each check opens a connection of its own and closes it: a probe must say whether the database
can be reached now, not whether a pooled connection still looks open. The answer names each
check and, for a failed one, why, in words that hold no secret (no URL, no password).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from cronpilot.adapters.sql.engine import create_engine
from cronpilot.adapters.sql.migrate import alembic_config
from cronpilot.domain.errors import StoreUnavailable
from cronpilot.domain.ports import WorkerLoop

CHECK_TIMEOUT_SECONDS = 3.0
"""How long the database check may take: a probe that hangs on a silent network is answered
"not ready" well within Kubernetes' default probe timeout budget rather than timing out."""


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str


@dataclass(frozen=True, slots=True)
class Readiness:
    checks: list[Check]

    @property
    def ready(self) -> bool:
        return all(check.ok for check in self.checks)

    def document(self) -> dict[str, object]:
        """The JSON body of `/readyz`."""
        return {
            "ready": self.ready,
            "failed": [check.name for check in self.checks if not check.ok],
            "checks": {
                check.name: {"ok": check.ok, "detail": check.detail} for check in self.checks
            },
        }


def migration_head() -> str:
    """The newest revision this build ships (read once: it parses every migration script)."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None, "the migrations have one head"
    return head


DATABASE_CHECK_REUSE_SECONDS = 1.0
"""How long one database check answers every `/readyz`: the probe is open to every caller,
and a flood of them must not become a flood of new connections to the database."""


class ReadinessProbe:
    """Answers `/readyz` for one process: `database_url`'s reachability and revision, and the
    `loops` it runs (none for the API), each of which must have turned (`loop_turns`, seconds
    of `clock`) within `max_loop_age` seconds."""

    def __init__(
        self,
        database_url: str,
        *,
        loops: Collection[WorkerLoop] = (),
        loop_turns: Mapping[WorkerLoop, float] | None = None,
        max_loop_age: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._url = database_url
        self._head = migration_head()
        self._loops = tuple(loops)
        self._turns = loop_turns if loop_turns is not None else {}
        self._max_loop_age = max_loop_age
        self._clock = clock
        self._checking = asyncio.Lock()
        self._last: tuple[float, tuple[Check, Check]] | None = None

    async def check(self) -> Readiness:
        database, migrations = await self._database()
        return Readiness([database, migrations, *(self._loop(loop) for loop in self._loops)])

    async def _database(self) -> tuple[Check, Check]:
        """The database's checks, made once for all the calls that come while one is made and
        within `DATABASE_CHECK_REUSE_SECONDS` after it."""
        async with self._checking:
            if self._last is not None and self._clock() - self._last[0] < (
                DATABASE_CHECK_REUSE_SECONDS
            ):
                return self._last[1]
            checks = await self._check_database()
            self._last = (self._clock(), checks)
            return checks

    async def _check_database(self) -> tuple[Check, Check]:
        unknown = Check("migrations", False, "unknown: the database cannot be reached")
        try:
            revision = await asyncio.wait_for(self._revision(), CHECK_TIMEOUT_SECONDS)
        except TimeoutError:
            return Check(
                "database", False, f"no answer within {CHECK_TIMEOUT_SECONDS:g} s"
            ), unknown
        except (StoreUnavailable, OSError, SQLAlchemyError) as error:
            return Check("database", False, f"unreachable ({_kind(error)})"), unknown
        reachable = Check("database", True, "reachable")
        if revision == self._head:
            return reachable, Check("migrations", True, f"at head {self._head}")
        found = "no schema" if revision is None else f"at {revision}"
        return reachable, Check(
            "migrations", False, f"{found}, head is {self._head}: run `cronpilot db upgrade`"
        )

    async def _revision(self) -> str | None:
        """The database's Alembic revision, None when it has no schema yet."""
        engine = create_engine(self._url, pool_size=1)
        try:
            async with engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
                try:
                    row = (
                        await conn.execute(text("SELECT version_num FROM alembic_version"))
                    ).first()
                except DBAPIError:
                    return None
                return None if row is None else str(row[0])
        finally:
            await engine.dispose()

    def _loop(self, loop: WorkerLoop) -> Check:
        name = f"{loop}_loop"
        turned = self._turns.get(loop)
        if turned is None:
            return Check(name, False, "has not turned yet")
        age = self._clock() - turned
        if age > self._max_loop_age:
            return Check(
                name, False, f"last turned {age:.0f} s ago (limit {self._max_loop_age:g} s)"
            )
        return Check(name, True, f"turned {age:.1f} s ago")


def _kind(error: BaseException) -> str:
    """The driver's error class: what went wrong, never the message (it may name the host and
    user, and a URL's password in some drivers)."""
    reason = error.orig if isinstance(error, DBAPIError) and error.orig is not None else error
    return type(reason).__name__
