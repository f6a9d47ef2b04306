"""Stories told on the endpoint simulator: a jobs document applied to a store while the
simulator serves it on 127.0.0.1 in a clock's time. The planner exams sit them
(`harness.exams.runner`); the tests' stories (`tests/support/rule_stories.py`,
`tests/support/console_story.py`) and the benchmarks' player (`bench/player.py`) are staged here
too, so that a story starts, declares its jobs and stops one way."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

from cronpilot.adapters.jobs_file import parse_declarations
from cronpilot.domain.ports import JobDeclaration, Store
from cronpilot.harness.simulator import Simulator
from cronpilot.usecases.declarations import apply_declarations

START = datetime(2030, 3, 2, 9, 0, tzinfo=UTC)
"""When a story begins on its fake clock (the exams grade against the simulator from here)."""
LOOPBACK = ["127.0.0.1/32"]
"""The only network a story's endpoints call: the simulator's."""


@dataclass(frozen=True)
class Stage:
    """A story's simulator, serving, and the jobs declared against it."""

    simulator: Simulator
    url: str
    declarations: list[JobDeclaration]


@asynccontextmanager
async def staged(
    store: Store,
    jobs: str,
    name: str,
    now: Callable[[], datetime],
    *,
    actor: str,
    seed: int = 7,
    cycle_seconds: float = 60.0,
    allowed_networks: Sequence[str] = LOOPBACK,
) -> AsyncIterator[Stage]:
    """The simulator serving in `now`'s time, and `jobs` (a jobs document naming it
    `${SIMULATOR_URL}`) applied to `store` as `name` by `actor`; the simulator stops on leaving."""
    simulator = Simulator(seed=seed, cycle_seconds=cycle_seconds, now=now)
    try:
        url = await simulator.start()
        declarations = parse_declarations(jobs, name, allowed_networks, {"SIMULATOR_URL": url})
        await apply_declarations(
            store.unit_of_work, None, declarations, name, actor=actor, now=now()
        )
        yield Stage(simulator, url, declarations)
    finally:
        await simulator.stop()
