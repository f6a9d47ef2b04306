"""The governor: one pure function deciding an endpoint's next run time and why.

Precedence (design, "Governor"): baseline (cron or anchored interval) → failure backoff →
fresh hints (interval replaces the baseline, one-shot wins if earlier) → the endpoint's
`Retry-After` (wins when later, never pulls a run earlier) → clamp into [now + min, now + max]
→ a pause wins over everything.
"""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import datetime, timedelta

from domain.model import Endpoint, NextRun, ScheduleSource
from domain.schedule import baseline_period, next_cron_fire

BACKOFF_CAP = timedelta(hours=1)
"""Failure backoff never waits longer than this (the max clamp may cut it shorter)."""
_MAX_BACKOFF_EXPONENT = 64


def _anchored(last_slot: datetime | None, period: timedelta, now: datetime) -> datetime:
    """The slot after `last_slot` on its grid; a missed slot coalesces to one run now."""
    if last_slot is None:
        return now
    return max(last_slot + period, now)


def _baseline(endpoint: Endpoint, now: datetime) -> datetime:
    schedule = endpoint.spec.schedule
    if schedule.cron is not None:
        after = endpoint.last_slot_at or now
        return max(next_cron_fire(schedule.cron, schedule.timezone, after), now)
    assert schedule.interval_seconds is not None
    return _anchored(endpoint.last_slot_at, timedelta(seconds=schedule.interval_seconds), now)


def _backoff(endpoint: Endpoint, now: datetime) -> datetime | None:
    if endpoint.failure_count <= 0:
        return None
    period = baseline_period(endpoint.spec.schedule, now)
    cap = max(BACKOFF_CAP, period)
    # Past the cap the factor no longer matters; bounding it keeps `period * factor` in range.
    factor = min(1 << min(endpoint.failure_count, _MAX_BACKOFF_EXPONENT), math.ceil(cap / period))
    delay = min(period * factor, cap)
    return max((endpoint.last_slot_at or now) + delay, now)


def plan_next_run(endpoint: Endpoint, now: datetime) -> NextRun:
    """When `endpoint` should run next, seen at `now`: never in the past, deterministic."""
    pause = endpoint.pause
    if pause is not None and (pause.until is None or pause.until > now):
        if pause.until is None:
            return NextRun(None, ScheduleSource.PAUSED)
        # Slots missed while paused are skipped, not caught up: plan afresh from the pause's
        # end, so a daily 03:00 cron paused until noon waits for the next 03:00.
        resumed = replace(endpoint, pause=None, last_slot_at=None)
        return NextRun(plan_next_run(resumed, pause.until).at, ScheduleSource.PAUSED)

    schedule = endpoint.spec.schedule
    if schedule.after_upstreams:
        return NextRun(None, ScheduleSource.DAG)

    at = _baseline(endpoint, now)
    source = ScheduleSource.BASELINE
    backoff = _backoff(endpoint, now)
    if backoff is not None and backoff > at:
        at, source = backoff, ScheduleSource.BACKOFF

    interval = endpoint.interval_hint
    if interval is not None and interval.expires_at > now:
        period = timedelta(seconds=interval.interval_seconds)
        at = _anchored(endpoint.last_slot_at, period, now)
        source = ScheduleSource.HINT_INTERVAL
    oneshot = endpoint.oneshot_hint
    if oneshot is not None and oneshot.expires_at > now:
        shot = max(oneshot.at, now)
        if shot < at:
            at, source = shot, ScheduleSource.HINT_ONESHOT
    retry_after = endpoint.retry_after_at
    if retry_after is not None and retry_after > at:
        at, source = retry_after, ScheduleSource.RETRY_AFTER

    spec = endpoint.spec
    if spec.min_interval_seconds is not None:
        low = now + timedelta(seconds=spec.min_interval_seconds)
        if at < low:
            at, source = low, ScheduleSource.CLAMPED_MIN
    if spec.max_interval_seconds is not None:
        high = now + timedelta(seconds=spec.max_interval_seconds)
        if at > high:
            at, source = high, ScheduleSource.CLAMPED_MAX
    return NextRun(at, source)
