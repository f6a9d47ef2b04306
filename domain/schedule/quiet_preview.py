"""What quiet windows do to a crontab's next fires (`cronpilot cron --quiet`): each fire kept
or removed as the governor plans them, so the preview and the scheduler never disagree."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from cronpilot.domain.model import Endpoint, EndpointSpec, Schedule, ScheduleSource
from cronpilot.domain.schedule.governor import plan_next_run
from cronpilot.domain.schedule.quiet import QuietSpan, QuietWindow, window_at
from cronpilot.domain.schedule.schedule import next_cron_fire


@dataclass(frozen=True, slots=True)
class PreviewedFire:
    at: datetime
    window: QuietSpan | None = None
    """The quiet window that removed the fire; None for a fire kept."""

    @property
    def kept(self) -> bool:
        return self.window is None


def previewed_fires(
    schedule: Schedule,
    windows: tuple[QuietWindow, ...],
    after: datetime,
    count: int,
    limit: int,
) -> list[PreviewedFire]:
    """The crontab's fires after `after` up to its `count`th kept one (at most `limit` fires
    in all), each with the window that removed it: skipped (the window's one skipped run
    among them), or passed over by a window that slows calls."""
    assert schedule.cron is not None, "a preview is of a crontab"
    spec = EndpointSpec(name="preview", url="", schedule=schedule, quiet=windows)
    endpoint = Endpoint(id="preview", job_id="", job_name="", spec=spec)
    kept: set[datetime] = set()
    now = after
    for _ in range(limit):
        planned = plan_next_run(endpoint, now)
        if planned.at is None:
            break
        slot = planned.slot or planned.at
        if planned.source is ScheduleSource.BASELINE:
            kept.add(slot)
            if len(kept) == count:
                break
        endpoint, now = replace(endpoint, last_slot_at=slot), planned.at
    fires: list[PreviewedFire] = []
    fire, shown = after, 0
    while len(fires) < limit and shown < len(kept):
        fire = next_cron_fire(schedule.cron, schedule.timezone, fire)
        shown += fire in kept
        fires.append(PreviewedFire(fire, None if fire in kept else window_at(windows, fire)))
    return fires
