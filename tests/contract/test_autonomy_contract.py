"""Graded autonomy in every store (memory, SQLite, PostgreSQL): the `dangerous` declaration
field and the jobs' autonomy steps (issue 13, migration 0016); the proposals' confidence is in
`test_planner_contract`."""

from __future__ import annotations

from dataclasses import replace

from cronpilot.domain.model import Job, PlannerMode, new_id
from cronpilot.domain.planning.autonomy import AutonomyStep
from cronpilot.domain.ports import JobDeclaration, Store
from cronpilot.usecases.declarations import apply_to_catalog
from tests.contract.builders import T0, seconds, spec


async def test_a_dangerous_endpoint_in_a_graded_job_round_trips(store: Store) -> None:
    declared = JobDeclaration(
        Job("j", planner_mode=PlannerMode.GRADED), [spec("e", dangerous=True)]
    )
    await apply_to_catalog(store.catalog, [declared], T0)

    again = await apply_to_catalog(store.catalog, [declared], T0)
    undone = await apply_to_catalog(store.catalog, [replace(declared, endpoints=[spec("e")])], T0)

    stored = await store.catalog.get_endpoint("j/e")
    assert again.unchanged == ["j", "j/e"]
    assert undone.updated == ["j/e"]
    assert stored.spec.dangerous is False
    assert (await store.catalog.get_job("j")).planner_mode is PlannerMode.GRADED


async def test_autonomy_steps_are_kept_per_job_oldest_first(store: Store) -> None:
    await apply_to_catalog(
        store.catalog,
        [JobDeclaration(Job("j"), [spec("e")]), JobDeclaration(Job("k"), [spec("e")])],
        T0,
    )
    j, k = await store.catalog.get_job("j"), await store.catalog.get_job("k")
    first = AutonomyStep(j.id, T0, 0.92, 1, 0, "approved: 1 approved, 0 rejected", new_id())
    second = AutonomyStep(j.id, T0 + seconds(5), 0.87, 0, 0, "approved: threshold moved", None)
    other = AutonomyStep(k.id, T0, 0.92, 0, 1, "rejected", new_id())
    for step in (first, other, second):
        await store.planner.add_autonomy_step(step)

    assert await store.planner.autonomy_history(j.id) == [first, second]
    assert await store.planner.autonomy_history(k.id) == [other]
    assert await store.planner.autonomy_history(new_id()) == []
