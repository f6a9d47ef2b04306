"""Quiet windows in the governor, the transitions around it and the cron preview: one skipped
run per window, the grid kept after it, hints and backoff held out of it, the window's slot
never `missed` nor `late`, a quiet root's dependants skipped; and `domain.schedule.quiet`'s
windows."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from typing import Any

from cronpilot.domain.graph.dag import outcome_of
from cronpilot.domain.model import (
    Endpoint,
    EndpointSpec,
    IntervalHint,
    NextRun,
    Pause,
    Run,
    RunStatus,
    RunTrigger,
    Schedule,
    ScheduleSource,
)
from cronpilot.domain.runs.transitions import after_finish
from cronpilot.domain.runs.watch import missed_slot
from cronpilot.domain.schedule.governor import catch_up, plan_next_run
from cronpilot.domain.schedule.quiet import (
    QuietSpan,
    QuietWindow,
    next_window,
    skipped_quietly,
    window_at,
)
from cronpilot.domain.schedule.quiet_preview import previewed_fires

NOON = datetime(2030, 1, 7, 12, 0, tzinfo=UTC)  # a Monday
LUNCH = (QuietWindow(hours=(12 * 60, 12 * 60 + 30)),)
BASELINE, QUIET = ScheduleSource.BASELINE, ScheduleSource.QUIET


def at(minutes: float) -> datetime:
    return NOON + timedelta(minutes=minutes)


def endpoint(schedule: Schedule | None = None, **state: Any) -> Endpoint:
    spec = EndpointSpec("e", "https://example.com/e", schedule or Schedule(interval_seconds=600))
    return Endpoint("id", "job", "job", replace(spec, quiet=LUNCH), **state)


def test_a_windows_first_slot_is_its_skipped_run_and_the_grid_resumes_after_it() -> None:
    before = endpoint(last_slot_at=at(-3))

    assert plan_next_run(before, at(-1)) == NextRun(at(7), QUIET)
    # Once it is recorded, the next slot is the grid's first after the window (12:37, not
    # 12:30: the interval keeps its anchor).
    assert plan_next_run(replace(before, last_slot_at=at(7)), at(7)) == NextRun(at(37), BASELINE)


def test_a_fire_at_the_windows_end_is_kept() -> None:
    hourly = endpoint(Schedule(cron="30 * * * *"), last_slot_at=at(0))

    assert plan_next_run(hourly, at(1)) == NextRun(at(30), BASELINE)
    fresh = endpoint(Schedule(cron="*/30 * * * *"))
    assert plan_next_run(fresh, at(-1)) == NextRun(at(0), QUIET)
    assert plan_next_run(replace(fresh, last_slot_at=at(0)), at(0)) == NextRun(at(30), BASELINE)


def test_after_downtime_no_slot_is_caught_up_into_a_window() -> None:
    planned = endpoint(last_slot_at=at(-13), next_run_at=at(-3))

    assert catch_up(planned, at(-2)) is None, "within its grace, the planned slot runs"
    # Down until 12:08: the latest missed slot (12:07) is in the window, its skipped run now.
    assert catch_up(planned, at(8)) == NextRun(at(8), QUIET, at(7))
    marked = replace(planned, last_slot_at=at(7), next_run_at=at(37))
    assert catch_up(marked, at(37.5)) is None, "12:37, after the window, runs late"


def test_a_pause_ending_in_a_window_plans_its_skipped_run() -> None:
    paused = endpoint(last_slot_at=at(-13), pause=Pause("deploy", until=at(5)))

    assert plan_next_run(paused, at(-12)) == NextRun(at(5), QUIET)
    assert plan_next_run(replace(paused, pause=Pause("deploy", until=at(-5))), at(-12)) == (
        NextRun(at(-5), ScheduleSource.PAUSED)
    )


def test_a_planner_hint_never_calls_inside_a_window() -> None:
    hint = IntervalHint(30, at(120), "busy")
    hinted = endpoint(last_slot_at=at(-0.25), interval_hint=hint)

    assert plan_next_run(hinted, at(-0.2)) == NextRun(at(0.25), QUIET)
    after_skip = plan_next_run(replace(hinted, last_slot_at=at(0.25)), at(0.25))
    assert after_skip == NextRun(at(30), ScheduleSource.HINT_INTERVAL)


def test_backoff_into_a_window_is_skipped_and_the_skip_keeps_the_failure_streak() -> None:
    failing = endpoint(last_slot_at=at(-10), failure_count=1)
    assert plan_next_run(failing, at(-9)) == NextRun(at(10), QUIET), "backed off 20 minutes"

    quiet_run = _run(at(10), ScheduleSource.QUIET)
    skipped = skipped_quietly(LUNCH, quiet_run.slot_at, at(10))
    ended = after_finish(failing, quiet_run, skipped, at(10))

    assert ended.failure_count == 1
    assert ended.last_slot_at == at(10)
    assert skipped.error_message == "skipped: quiet period until 2030-01-07T12:30:00+00:00"


def test_a_slowing_window_keeps_one_call_per_every() -> None:
    slow = (replace(LUNCH[0], every_seconds=900.0),)
    minutely = replace(endpoint(Schedule(interval_seconds=60)), last_slot_at=at(1))
    minutely = replace(minutely, spec=replace(minutely.spec, quiet=slow))

    assert plan_next_run(minutely, at(1.5)) == NextRun(at(16), BASELINE)
    assert plan_next_run(replace(minutely, last_slot_at=at(16)), at(16)) == NextRun(
        at(30), BASELINE
    )


def test_a_quiet_slot_is_never_missed_and_its_run_is_skipped() -> None:
    watched = endpoint(last_slot_at=at(-3))
    watched = replace(watched, spec=replace(watched.spec, missed_after_seconds=60))
    due = replace(watched, next_run_at=at(7), next_run_source=QUIET)

    assert missed_slot(due, at(30)) is None
    assert missed_slot(replace(due, next_run_source=BASELINE), at(30)) == at(7)

    run = _run(at(7), ScheduleSource.QUIET, status=RunStatus.SKIPPED)
    assert outcome_of(run, None, watched).skipped


def test_touching_windows_are_one_and_dated_days_hold_their_wall_clock() -> None:
    weekend = (
        QuietWindow(timezone="Europe/Paris", days=(4,), hours=(18 * 60, 24 * 60)),
        QuietWindow(timezone="Europe/Paris", days=(5, 6)),
        QuietWindow(timezone="Europe/Paris", dates=(date(2030, 1, 14),), hours=(0, 8 * 60)),
    )
    friday_evening = datetime(2030, 1, 11, 20, tzinfo=UTC)

    assert window_at(weekend, friday_evening) == QuietSpan(
        datetime(2030, 1, 11, 17, tzinfo=UTC), datetime(2030, 1, 14, 7, tzinfo=UTC)
    )
    assert window_at(weekend, datetime(2030, 1, 14, 7, tzinfo=UTC)) is None
    upcoming = next_window(weekend, NOON)
    assert upcoming is not None and upcoming.start == datetime(2030, 1, 11, 17, tzinfo=UTC)


def _run(slot: datetime, source: ScheduleSource, status: RunStatus = RunStatus.RUNNING) -> Run:
    return Run(
        id="r",
        endpoint_id="id",
        job_id="job",
        trace_id="t",
        trigger=RunTrigger.SCHEDULE,
        schedule_source=source,
        status=status,
        slot_at=slot,
        started_at=slot,
        worker_id="w",
    )


def test_a_preview_marks_each_fire_kept_or_removed_by_its_window() -> None:
    weekend = (QuietWindow(days=(5, 6)),)
    friday = datetime(2030, 1, 11, 10, tzinfo=UTC)

    fires = previewed_fires(Schedule(cron="0 12 * * *"), weekend, friday, 2, 100)

    saturday = QuietSpan(datetime(2030, 1, 12, tzinfo=UTC), datetime(2030, 1, 14, tzinfo=UTC))
    assert [(fire.at.day, fire.window) for fire in fires] == [
        (11, None),
        (12, saturday),
        (13, saturday),
        (14, None),
    ]
