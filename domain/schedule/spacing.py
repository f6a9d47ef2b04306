"""How close a baseline's slots come to each other: what a declaration's floor and jitter are
checked against before anything is written."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import lru_cache

from cronpilot.domain.errors import InvalidSchedule
from cronpilot.domain.model import Schedule
from cronpilot.domain.schedule.schedule import next_cron_fire

GAP_SAMPLE = 500
"""Fires compared: every gap of the crontabs people write repeats well within them (a
second-level expression repeats each minute, a daily one each week), and sampling stays quick.
A gap the sample misses (a DST change shortening one night) is still kept safe when planning:
jitter never runs into the next slot and the governor never plans a slot under the floor."""
_REFERENCE = datetime(2026, 1, 1, tzinfo=UTC)
"""A fixed start, so that the same file is accepted or refused whenever it is applied."""
_HORIZON = timedelta(days=10 * 366)
"""Sparse expressions (29 February) are sampled over ten years, not over millennia."""


def shortest_gap(schedule: Schedule) -> float | None:
    """Seconds between the closest two consecutive slots of a baseline: the interval, or the
    shortest gap among a cron's first `GAP_SAMPLE` fires in ten years from a fixed reference
    (None if it fires less than twice then). Assumes a schedule `validate_schedule` accepted."""
    if schedule.cron is None:
        return schedule.interval_seconds
    return _shortest_cron_gap(schedule.cron, schedule.timezone)


@lru_cache(maxsize=1024)
def _shortest_cron_gap(cron: str, timezone: str) -> float | None:
    shortest: timedelta | None = None
    fire = next_cron_fire(cron, timezone, _REFERENCE)
    for _ in range(GAP_SAMPLE):
        try:
            following = next_cron_fire(cron, timezone, fire)
        except InvalidSchedule:
            break
        if following - _REFERENCE > _HORIZON:
            break
        gap = following - fire
        shortest = gap if shortest is None else min(shortest, gap)
        fire = following
    return None if shortest is None else shortest.total_seconds()
