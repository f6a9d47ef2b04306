"""The example's health checks answer a new time and latency on every call: declared in
`change_ignores`, those are no change, so the heuristic does not tighten a region whose status
holds (the demo's health/* did, to the min clamp, until the change limit refused it)."""

from __future__ import annotations

from datetime import UTC, datetime

from cronpilot.adapters.jobs_file import example_jobs_file, parse_declarations
from cronpilot.adapters.simulator.scenario import Scenario
from cronpilot.domain.change_detection import comparable_hash
from cronpilot.domain.field_paths import parse_field_path
from cronpilot.domain.model import Run, RunStatus, RunTrigger, ScheduleSource

T0 = datetime(2030, 1, 7, 12, tzinfo=UTC)


def _run(body: object) -> Run:
    return Run(
        id="r",
        endpoint_id="e",
        job_id="j",
        trace_id="t",
        trigger=RunTrigger.SCHEDULE,
        schedule_source=ScheduleSource.BASELINE,
        status=RunStatus.SUCCESS,
        slot_at=T0,
        started_at=T0,
        worker_id="w",
        body=body,
        body_hash=repr(body),
    )


def test_a_health_check_changes_only_when_its_status_does() -> None:
    text = example_jobs_file().read_text(encoding="utf-8")
    env = {"SIMULATOR_URL": "http://127.0.0.1:1"}
    declared = parse_declarations(text, "jobs.yaml", ["127.0.0.1/32"], env)
    [health] = [d for d in declared if d.job.name == "health"]
    scenario = Scenario(seed=7, started_at=T0)

    for spec in health.endpoints:
        ignored = tuple(parse_field_path(path) for path in spec.change_ignores)
        answers = [scenario.health(spec.name, 0.5 * n) for n in range(400)]
        by_status: dict[str, set[str | None]] = {}
        for answer in answers:
            by_status.setdefault(answer["status"], set()).add(
                comparable_hash(_run(answer), ignored)
            )
        assert len({a["checked_at"] for a in answers}) == len(answers)
        assert all(len(hashes) == 1 for hashes in by_status.values()), spec.name
        assert len(by_status) > 1, spec.name
