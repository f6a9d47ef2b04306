"""The rules of issue 25 on their own: when a job's pause holds, what it delays, how a DAG run
treats a dependant of a paused job, and what a cancel does to a run of each status."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from cronpilot.domain.errors import RunFinished
from cronpilot.domain.graph.dag import DagWait, skip_reason
from cronpilot.domain.model import (
    Endpoint,
    EndpointSpec,
    Pause,
    Run,
    RunStatus,
    RunTrigger,
    Schedule,
    ScheduleSource,
    SkipKind,
)
from cronpilot.domain.runs.cancelling import cancel_asked, cancelled_run
from cronpilot.domain.schedule.pauses import held_until, job_holds

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


def _endpoint(job_pause: Pause | None = None, pause: Pause | None = None) -> Endpoint:
    spec = EndpointSpec("e", "https://example.com/e", Schedule(interval_seconds=60))
    return Endpoint("e1", "j1", "etl", spec, pause=pause, job_pause=job_pause)


@pytest.mark.parametrize(
    ("pause", "holds", "due_at_now"),
    [
        (None, False, NOW),
        (Pause("upkeep"), True, None),
        (Pause("upkeep", NOW + HOUR), True, NOW + HOUR),
        (Pause("upkeep", NOW), False, NOW),
        (Pause("upkeep", NOW - HOUR), False, NOW),
    ],
)
def test_a_job_pause_holds_until_its_end_and_delays_what_is_due_to_it(
    pause: Pause | None, holds: bool, due_at_now: datetime | None
) -> None:
    endpoint = _endpoint(pause)
    assert job_holds(endpoint, NOW) is holds
    assert held_until(endpoint, NOW) == due_at_now


def test_a_dependant_of_a_paused_job_is_skipped_as_paused_whatever_its_own_pause() -> None:
    wait = DagWait("dag1", "e1", "root", NOW, ready=True)
    for own in (None, Pause("mine")):
        skipped = skip_reason(_endpoint(Pause("upkeep"), own), wait, NOW, {})
        assert skipped == (SkipKind.PAUSED, "its job 'etl' is paused")
    assert skip_reason(_endpoint(Pause("over", NOW - HOUR)), wait, NOW, {}) is None


def _run(status: RunStatus) -> Run:
    return Run(
        "r1", "e1", "j1", "t1", RunTrigger.MANUAL, ScheduleSource.BASELINE, status, NOW, NOW, "w1"
    )


def test_a_cancel_ends_a_queued_run_marks_a_running_one_and_refuses_a_finished_one() -> None:
    queued = cancel_asked(_run(RunStatus.QUEUED), "cli:ann@web-1", NOW)
    running = cancel_asked(_run(RunStatus.RUNNING), "cli:ann@web-1", NOW)

    assert (queued.status, queued.finished_at) == (RunStatus.CANCELLED, NOW)
    assert queued.error_message == "cancelled by cli:ann@web-1 before it started"
    assert (running.status, running.cancel_requested_by) == (RunStatus.RUNNING, "cli:ann@web-1")
    assert cancel_asked(running, "token:bot", NOW) is running
    cut = cancelled_run(running, NOW + timedelta(seconds=2))
    assert (cut.status, cut.duration_ms) == (RunStatus.CANCELLED, 2000.0)
    assert cut.error_message == "cancelled by cli:ann@web-1 while running"
    for status in (s for s in RunStatus if s.finished):
        with pytest.raises(RunFinished, match=f"has finished \\({status.value}\\)"):
            cancel_asked(replace(_run(status), finished_at=NOW), "cli:ann@web-1", NOW)
