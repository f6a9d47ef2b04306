"""An endpoint's timeline as the geometry of an inline SVG chart, drawn on the server: time
across, the interval in force up (log scale), each run a dot coloured by outcome, hints and
pauses shaded; every mark says what it is on hover (an SVG `<title>`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from cronpilot.adapters.views.formats import span
from cronpilot.domain.model import Run
from cronpilot.domain.schedule.timeline import Timeline

WIDTH, HEIGHT = 960, 260
LEFT, RIGHT, TOP, BOTTOM = 56, 12, 12, 30
LANE = 8
"""Runs with no interval before them (the first, by hand, of a DAG) sit on a lane this far
above the time axis."""
NICE_SECONDS = (0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400)
X_TICKS = 6
MIN_SPAN = timedelta(minutes=1)


@dataclass(frozen=True, slots=True)
class Tick:
    at: float
    label: str


@dataclass(frozen=True, slots=True)
class Segment:
    x1: float
    x2: float
    y: float
    title: str
    planned: bool


@dataclass(frozen=True, slots=True)
class Riser:
    x: float
    y1: float
    y2: float


@dataclass(frozen=True, slots=True)
class Dot:
    x: float
    y: float
    status: str
    title: str
    href: str


@dataclass(frozen=True, slots=True)
class Shade:
    x: float
    width: float
    kind: str
    title: str


@dataclass(slots=True)
class Chart:
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    right: int = WIDTH - RIGHT
    top: int = TOP
    bottom: int = HEIGHT - BOTTOM
    segments: list[Segment] = field(default_factory=list)
    risers: list[Riser] = field(default_factory=list)
    dots: list[Dot] = field(default_factory=list)
    shades: list[Shade] = field(default_factory=list)
    x_ticks: list[Tick] = field(default_factory=list)
    y_ticks: list[Tick] = field(default_factory=list)
    summary: str = ""
    """The chart in one sentence, for those who cannot see it."""


def chart(timeline: Timeline, run_href: Callable[[Run], str]) -> Chart:
    drawn = Chart()
    start, end = timeline.start, max(timeline.end, timeline.start + MIN_SPAN)
    seconds = (end - start).total_seconds()

    def x(moment: datetime) -> float:
        offset = (min(max(moment, start), end) - start).total_seconds()
        return round(drawn.left + offset / seconds * (drawn.right - drawn.left), 1)

    intervals = [s.seconds for s in timeline.steps]
    low, high = (min(intervals) / 1.5, max(intervals) * 1.5) if intervals else (1.0, 60.0)
    if high / low < 4:
        low, high = low / 2, high * 2

    def y(interval: float) -> float:
        share = (math.log(interval) - math.log(low)) / (math.log(high) - math.log(low))
        return round(drawn.bottom - share * (drawn.bottom - drawn.top), 1)

    for band in timeline.bands:
        left = x(band.start)
        drawn.shades.append(Shade(left, max(x(band.end) - left, 2), band.kind.value, band.label))
    previous: float | None = None
    ends_at: dict[datetime, float] = {}
    for step in timeline.steps:
        height = y(step.seconds)
        what = "planned next" if step.planned else "then"
        drawn.segments.append(
            Segment(
                x(step.start),
                x(step.end),
                height,
                f"every {span(step.seconds)} ({step.source.value}), {what} at {_clock(step.end)}",
                step.planned,
            )
        )
        if previous is not None and previous != height:
            drawn.risers.append(Riser(x(step.start), previous, height))
        previous = height
        ends_at[step.end] = height
    for run in timeline.runs:
        code = f" {run.status_code}" if run.status_code is not None else ""
        title = (
            f"{_clock(run.slot_at)}: {run.status.value}{code}, source {run.schedule_source.value}, "
            f"trigger {run.trigger.value}"
        )
        height = ends_at.get(run.slot_at, drawn.bottom - LANE)
        drawn.dots.append(Dot(x(run.slot_at), height, run.status.value, title, run_href(run)))
    drawn.x_ticks = [
        Tick(x(start + (end - start) * i / X_TICKS), _clock(start + (end - start) * i / X_TICKS))
        for i in range(X_TICKS + 1)
    ]
    nice = [s for s in NICE_SECONDS if low <= s <= high]
    drawn.y_ticks = [Tick(y(s), span(s)) for s in nice[:: max(1, math.ceil(len(nice) / 5))]]
    drawn.summary = (
        f"{len(timeline.runs)} runs from {_clock(start)} to {_clock(end)}; "
        f"intervals from {span(min(intervals, default=0))} to {span(max(intervals, default=0))}; "
        f"{sum(b.kind.value == 'pause' for b in timeline.bands)} pauses, "
        f"{sum(b.kind.value != 'pause' for b in timeline.bands)} hints."
    )
    return drawn


def _clock(moment: datetime) -> str:
    return f"{moment.astimezone(UTC):%m-%d %H:%M:%S}Z"
