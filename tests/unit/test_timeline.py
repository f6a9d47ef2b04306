"""An endpoint's timeline (domain/schedule/timeline.py) and the chart the console draws of it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from cronpilot.adapters.console.timeline_chart import LANE, chart
from cronpilot.domain.access.audit import audit_entry
from cronpilot.domain.model import (
    Endpoint,
    Pause,
    Run,
    RunStatus,
    RunTrigger,
    ScheduleSource,
)
from cronpilot.domain.planning.planning import Proposal, ProposalKind, ProposalStatus
from cronpilot.domain.schedule.timeline import BandKind, build_timeline

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
MakeEndpoint = Callable[..., Endpoint]


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def run(
    seconds: float,
    source: ScheduleSource = ScheduleSource.BASELINE,
    trigger: RunTrigger = RunTrigger.SCHEDULE,
    status: RunStatus = RunStatus.SUCCESS,
) -> Run:
    return Run(
        id=f"run-{seconds}",
        endpoint_id="ep-1",
        job_id="job-1",
        trace_id=f"trace-{seconds}",
        trigger=trigger,
        schedule_source=source,
        status=status,
        slot_at=at(seconds),
        started_at=at(seconds),
        worker_id="w",
    )


def applied(seconds: float, kind: ProposalKind, **fields: object) -> Proposal:
    return Proposal(
        id=f"p-{seconds}",
        endpoint_id="ep-1",
        job_id="job-1",
        kind=kind,
        reason=f"reason at {seconds}",
        proposed_by="heuristic",
        created_at=at(seconds),
        status=ProposalStatus.APPLIED,
        decided_by="auto",
        decided_at=at(seconds),
        **fields,  # type: ignore[arg-type]
    )


def test_each_step_is_the_gap_between_scheduled_slots_with_the_later_slot_s_source(
    make_endpoint: MakeEndpoint,
) -> None:
    endpoint = make_endpoint(next_slot_at=at(25), next_run_at=at(25))
    runs = [
        run(0),
        run(10),
        run(12, trigger=RunTrigger.MANUAL),
        run(15, ScheduleSource.HINT_INTERVAL),
        run(20, ScheduleSource.HINT_INTERVAL),
    ]
    drawn = build_timeline(endpoint, runs[::-1], [], [], start=at(-60), now=at(21))
    assert [(s.seconds, s.source, s.planned) for s in drawn.steps] == [
        (10, ScheduleSource.BASELINE, False),
        (5, ScheduleSource.HINT_INTERVAL, False),
        (5, ScheduleSource.HINT_INTERVAL, False),
        (5, ScheduleSource.BASELINE, True),
    ]
    assert [r.slot_at for r in drawn.runs] == [at(s) for s in (0, 10, 12, 15, 20)]
    assert drawn.start == at(0)


def test_runs_before_the_window_are_left_out(make_endpoint: MakeEndpoint) -> None:
    drawn = build_timeline(make_endpoint(), [run(0), run(100)], [], [], start=at(50), now=at(120))
    assert [r.slot_at for r in drawn.runs] == [at(100)]


def test_an_interval_hint_lasts_its_ttl_or_until_the_next_one_replaces_it(
    make_endpoint: MakeEndpoint,
) -> None:
    proposals = [
        applied(10, ProposalKind.INTERVAL, interval_seconds=5, ttl_seconds=100),
        applied(40, ProposalKind.INTERVAL, interval_seconds=2, ttl_seconds=30),
        applied(50, ProposalKind.NEXT_TIME, at=at(55), ttl_seconds=60),
    ]
    drawn = build_timeline(make_endpoint(), [], proposals, [], start=at(0), now=at(200))
    hints = [(b.kind, b.start, b.end) for b in drawn.bands]
    assert hints == [
        (BandKind.HINT, at(10), at(40)),
        (BandKind.HINT, at(40), at(70)),
        (BandKind.ONE_SHOT, at(55), at(55)),
    ]
    assert "interval hint 5s: reason at 10" in drawn.bands[0].label


def test_a_pause_lasts_until_a_resume_or_the_next_run_or_now_while_paused(
    make_endpoint: MakeEndpoint,
) -> None:
    audited = [
        audit_entry("token:ann", "pause", "job/probe", "until resumed: deploy", at(10)),
        audit_entry("token:ann", "resume", "job/probe", "", at(20)),
        audit_entry("token:ann", "pause", "job/probe", "until …: maintenance", at(30)),
    ]
    planner_pause = [applied(60, ProposalKind.PAUSE, at=at(300))]
    runs = [run(0), run(45)]
    ended = build_timeline(make_endpoint(), runs, [], audited, start=at(0), now=at(90))
    assert [(b.start, b.end) for b in ended.bands] == [(at(10), at(20)), (at(30), at(45))]
    paused = make_endpoint(pause=Pause("quiet", at(300)))
    still = build_timeline(paused, runs, planner_pause, [], start=at(0), now=at(90))
    assert [(b.kind, b.start, b.end) for b in still.bands] == [(BandKind.PAUSE, at(60), at(90))]
    assert "paused by the planner" in still.bands[0].label


def test_the_chart_puts_each_run_on_the_interval_that_led_to_it(
    make_endpoint: MakeEndpoint,
) -> None:
    runs = [run(0), run(10), run(12, trigger=RunTrigger.MANUAL, status=RunStatus.FAILED)]
    runs += [run(40, ScheduleSource.BACKOFF)]
    drawn = chart(
        build_timeline(make_endpoint(), runs, [], [], start=at(0), now=at(40)),
        lambda r: f"/runs/{r.id}",
    )
    assert [d.status for d in drawn.dots] == ["success", "success", "failed", "success"]
    short, long = drawn.segments
    assert long.y < short.y, "a longer interval is drawn higher"
    first, second, manual, backoff = drawn.dots
    assert (second.y, backoff.y) == (short.y, long.y)
    assert first.y == manual.y == drawn.bottom - LANE, "no interval before it: on the lane"
    assert "source backoff" in backoff.title and backoff.href == "/runs/run-40"
    assert [t.label for t in drawn.y_ticks] and drawn.x_ticks[0].at == drawn.left
    assert drawn.summary.startswith("4 runs from")


def test_a_one_shot_hint_is_shaded_wide_enough_to_see(make_endpoint: MakeEndpoint) -> None:
    proposals = [applied(5, ProposalKind.NEXT_TIME, at=at(20), ttl_seconds=60)]
    drawn = chart(
        build_timeline(make_endpoint(), [run(0), run(30)], proposals, [], start=at(0), now=at(30)),
        lambda r: r.id,
    )
    (shade,) = drawn.shades
    assert shade.kind == "one-shot" and shade.width >= 2
