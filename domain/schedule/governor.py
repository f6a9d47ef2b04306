"""The governor: one pure function deciding an endpoint's next run time and why.

Precedence (design, "Governor"): baseline (cron or anchored interval, with its jitter and its
catch-up rule) → failure backoff → fresh hints (interval replaces the baseline, one-shot wins
if earlier) → the endpoint's `Retry-After` (wins when later, never pulls a run earlier) → the
floor and the clamps (a call less than min after the previous slot waits until now + min; none
after now + max) → quiet windows (`_quieted`: skipped or slowed, whatever planned the call) →
a pause wins over everything.

A baseline slot stays on its grid: jitter moves its call, not the slot, a missed slot that is
caught up late is called now but recorded under its grid time (`NextRun.slot`), and so is a
slot the floor or the min clamp pushed later.
"""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import datetime, timedelta

from cronpilot.domain.model import (
    CatchUp,
    Claim,
    Endpoint,
    EndpointSpec,
    IntervalHint,
    NextRun,
    ScheduleSource,
)
from cronpilot.domain.schedule.jitter import jittered
from cronpilot.domain.schedule.quiet import window_at
from cronpilot.domain.schedule.schedule import baseline_period, latest_cron_fire, next_cron_fire

BACKOFF_CAP = timedelta(hours=1)
"""Failure backoff never waits longer than this (the max clamp may cut it shorter)."""
LATE_GRACE = timedelta(seconds=1)
"""A baseline call going out up to this late is on time, whatever the schedule."""
LATE_SHARE = 0.1
MAX_LATE_GRACE = timedelta(minutes=1)
"""A call later than `LATE_GRACE` is still only late, not missed, up to `LATE_SHARE` of the
gap to the next slot (at most `MAX_LATE_GRACE`): a worker that was merely busy (all its calls
in flight, the endpoint's previous call still running, a database lock) does not lose the slot
under `catch_up: none`. Later, the slot was missed (no scheduler was there to run it) and the
endpoint's catch-up rule decides what runs."""
_MAX_BACKOFF_EXPONENT = 64
_MICROSECOND = timedelta(microseconds=1)
_MAX_QUIET_JUMPS = 1000


def _anchored(last_slot: datetime | None, period: timedelta, now: datetime) -> datetime:
    """The slot after `last_slot` on its grid; a missed slot coalesces to one run now."""
    if last_slot is None:
        return now
    return max(last_slot + period, now)


def _following(endpoint: Endpoint, slot: datetime) -> datetime:
    """The baseline's grid slot after `slot`."""
    schedule = endpoint.spec.schedule
    if schedule.cron is not None:
        return next_cron_fire(schedule.cron, schedule.timezone, slot)
    assert schedule.interval_seconds is not None
    return slot + timedelta(seconds=schedule.interval_seconds)


def _call_time(endpoint: Endpoint, slot: datetime) -> datetime:
    spec = endpoint.spec
    if spec.jitter_seconds is None:
        return slot
    return jittered(
        endpoint.id,
        slot,
        _following(endpoint, slot),
        timedelta(seconds=spec.jitter_seconds),
        timedelta(seconds=spec.floor_seconds),
    )


def _around(endpoint: Endpoint, first: datetime, now: datetime) -> tuple[datetime | None, datetime]:
    """Of the grid slots from `first` (one of them) on: the latest at or before `now` (None
    when `first` is later) and the one after it."""
    if first > now:
        return None, first
    schedule = endpoint.spec.schedule
    if schedule.cron is not None:
        latest = latest_cron_fire(schedule.cron, schedule.timezone, first, now)
        return latest, _following(endpoint, latest)
    assert schedule.interval_seconds is not None
    # An interval under a microsecond (refused at apply) would make the grid stand still.
    period = max(timedelta(seconds=schedule.interval_seconds), _MICROSECOND)
    latest = first + (now - first) // period * period
    return latest, latest + period


def late_grace(gap: timedelta) -> timedelta:
    """How late the call of a slot `gap` before the next one may go out and still run under
    either catch-up rule (`MAX_LATE_GRACE`)."""
    return max(LATE_GRACE, min(gap * LATE_SHARE, MAX_LATE_GRACE))


def _catches_up(spec: EndpointSpec, late: timedelta, gap: timedelta, room: timedelta) -> bool:
    """Whether a slot whose call is `late` (past `LATE_GRACE`) runs once now: within its
    `late_grace`, or under `catch_up: one` within the window; unless the next slot, `gap` after
    it, comes within the floor (it stands for the late one)."""
    if room < timedelta(seconds=spec.floor_seconds):
        return False
    if late <= late_grace(gap):
        return True
    return spec.catch_up is CatchUp.ONE and late <= timedelta(seconds=spec.catch_up_window_seconds)


def _slot_from(endpoint: Endpoint, first: datetime, now: datetime) -> tuple[datetime, datetime]:
    """The slot to plan at `now` among the grid slots from `first` on, and when to call it.

    Of the slots whose time has come only the latest matters (the earlier ones coalesce into
    it): if its call is not yet more than `LATE_GRACE` late it runs; if it is late or was
    missed, it runs now by `_catches_up`. Otherwise the next slot of the grid, at its call
    time."""
    passed, upcoming = _around(endpoint, first, now)
    if passed is not None:
        called = _call_time(endpoint, passed)
        if called >= now - LATE_GRACE:
            return passed, max(called, now)
        if _catches_up(endpoint.spec, now - called, upcoming - passed, upcoming - now):
            return passed, now
    return upcoming, _call_time(endpoint, upcoming)


def _baseline(endpoint: Endpoint, now: datetime) -> tuple[datetime, datetime]:
    """The baseline's next slot and its call time."""
    schedule = endpoint.spec.schedule
    last = endpoint.last_slot_at
    if last is not None:
        first = _following(endpoint, last)
    elif schedule.cron is not None:
        first = next_cron_fire(schedule.cron, schedule.timezone, now)
    else:
        # A new (or resumed) interval endpoint starts its grid now.
        first = now
    return _slot_from(endpoint, first, now)


def _backoff(endpoint: Endpoint, now: datetime) -> datetime | None:
    if endpoint.failure_count <= 0:
        return None
    period = baseline_period(endpoint.spec.schedule, now)
    cap = max(BACKOFF_CAP, period)
    # Past the cap the factor no longer matters; bounding it keeps `period * factor` in range.
    factor = min(1 << min(endpoint.failure_count, _MAX_BACKOFF_EXPONENT), math.ceil(cap / period))
    delay = min(period * factor, cap)
    return max((endpoint.last_slot_at or now) + delay, now)


def _floor_at(endpoint: Endpoint) -> datetime | None:
    """The earliest the next slot may be planned: the floor after the previous slot, counted
    from the latest moment its call may have gone out (its jitter). None before a first run."""
    last = endpoint.last_slot_at
    if last is None:
        return None
    spec = endpoint.spec
    return last + timedelta(seconds=spec.floor_seconds + (spec.jitter_seconds or 0.0))


def _too_soon(last_slot: datetime | None, at: datetime, now: datetime, least: timedelta) -> bool:
    """Whether a call planned `at` breaks a min clamp of `least`: it comes less than `least`
    after the previous slot (after `now` when there is none) and before `now + least`.
    Measured from the slot, so that an interval equal to the minimum stays on its grid rather
    than drifting by each call's duration; a call that does come too soon waits the whole
    minimum from `now`, so the calls the clamp spaces are never closer than it."""
    return at < now + least and (last_slot is None or at < last_slot + least)


def fresh_interval_hint(endpoint: Endpoint, now: datetime) -> IntervalHint | None:
    """The endpoint's interval hint while it is in force (not expired at `now`): it replaces
    the baseline's interval."""
    hint = endpoint.interval_hint
    return hint if hint is not None and hint.expires_at > now else None


def plan_next_run(endpoint: Endpoint, now: datetime) -> NextRun:
    """When `endpoint` should run next, seen at `now`: never in the past, deterministic. A
    plan past the calendar's end (year 9999: a pause ending there, clamps or hints counted
    from a time near it) has no time, as a pause until resumed: that moment never comes."""
    try:
        return _plan(endpoint, now)
    except OverflowError:
        paused = endpoint.pause is not None
        return NextRun(None, ScheduleSource.PAUSED if paused else ScheduleSource.BASELINE)


def _plan(endpoint: Endpoint, now: datetime) -> NextRun:
    pause = endpoint.pause
    if pause is not None and (pause.until is None or pause.until > now):
        if pause.until is None:
            return NextRun(None, ScheduleSource.PAUSED)
        # Slots missed while paused are skipped, not caught up: plan afresh from the pause's
        # end, so a daily 03:00 cron paused until noon waits for the next 03:00.
        resumed = replace(endpoint, pause=None, last_slot_at=None)
        planned = _plan(resumed, pause.until)
        # A quiet window's skipped run stays one: its source tells the worker not to call.
        quiet = planned.source is ScheduleSource.QUIET
        return planned if quiet else replace(planned, source=ScheduleSource.PAUSED)

    if endpoint.spec.schedule.after_upstreams:
        return NextRun(None, ScheduleSource.DAG)
    if endpoint.spec.quiet:
        return _quieted(endpoint, now)
    return _planned(endpoint, now)


def _quieted(endpoint: Endpoint, now: datetime) -> NextRun:
    """The plan of an endpoint with quiet windows (`domain.schedule.quiet`), whatever chose it (the
    baseline, a hint, backoff): a call whose slot falls in a window that skips is the window's
    one skipped run (`ScheduleSource.QUIET`) if none was recorded in it yet, else the plan made
    from the window's end; in a window that slows, a call sooner than `every` after the previous
    slot is planned again from then (or from the window's end, if sooner)."""
    windows = endpoint.spec.quiet
    # The slot that ran last: `_resumed_at` counts skipped slots as passed, not as run.
    last = endpoint.last_slot_at
    for _ in range(_MAX_QUIET_JUMPS):
        planned = _planned(endpoint, now)
        assert planned.at is not None, "only a pause or a DAG leaves no time"
        moment = planned.at if planned.slot is None else planned.slot
        span = window_at(windows, moment)
        if span is None:
            return planned
        if span.every_seconds is None:
            if last is None or not span.holds(last):
                return NextRun(planned.at, ScheduleSource.QUIET, planned.slot)
            until = span.end
        else:
            least = last + timedelta(seconds=span.every_seconds) if last is not None else moment
            if moment >= least:
                return planned
            until = min(least, span.end)
        endpoint, now = _resumed_at(endpoint, until)
    # Windows one after the other for so long: `check_coverage` refuses them at apply.
    return NextRun(None, ScheduleSource.QUIET)


def _resumed_at(endpoint: Endpoint, until: datetime) -> tuple[Endpoint, datetime]:
    """The endpoint and the time to plan it from for a first call at or after `until`, with
    the grid slots before `until` counted as passed (none of them is caught up late)."""
    last = endpoint.last_slot_at
    cron = endpoint.spec.schedule.cron is not None
    if last is None:
        # A cron's first slot is its first fire strictly after the time planned from.
        return endpoint, until - _MICROSECOND if cron else until
    passed, _ = _around(endpoint, _following(endpoint, last), until - _MICROSECOND)
    return (endpoint if passed is None else replace(endpoint, last_slot_at=passed)), until


def _planned(endpoint: Endpoint, now: datetime) -> NextRun:
    """The plan from the baseline, backoff, hints, `Retry-After`, the floor and the clamps."""
    slot, at = _baseline(endpoint, now)
    source = ScheduleSource.BASELINE
    backoff = _backoff(endpoint, now)
    if backoff is not None and backoff > at:
        at, source = backoff, ScheduleSource.BACKOFF

    interval = fresh_interval_hint(endpoint, now)
    if interval is not None:
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
    from_baseline = source is ScheduleSource.BASELINE
    floor = _floor_at(endpoint)
    if floor is not None and at < floor:
        at, source = floor, ScheduleSource.CLAMPED_MIN
    if spec.min_interval_seconds is not None:
        least = timedelta(seconds=spec.min_interval_seconds)
        if _too_soon(endpoint.last_slot_at, at, now, least):
            at, source = now + least, ScheduleSource.CLAMPED_MIN
    if spec.max_interval_seconds is not None:
        high = now + timedelta(seconds=spec.max_interval_seconds)
        if at > high:
            at, source = high, ScheduleSource.CLAMPED_MAX
    if from_baseline and source is ScheduleSource.CLAMPED_MIN:
        # A baseline slot pushed later by the floor or the min clamp is still a slot of the
        # grid, called late: the latest one at or before the call (those it passed coalesce
        # into it, as missed slots do). The max clamp calls before the slot: a call of its own.
        latest, _ = _around(endpoint, slot, at)
        assert latest is not None, "the clamp only pushes a call later than its slot"
        slot = latest
    kept = from_baseline and source is not ScheduleSource.CLAMPED_MAX and slot != at
    return NextRun(at, source, slot if kept else None)


def slots_since(
    endpoint: Endpoint, slot: datetime, since: datetime, now: datetime, limit: int
) -> tuple[list[datetime], datetime | None]:
    """The slots of the baseline grid through `slot` that came after `since` and more than
    their late grace before `now` (a slot still within it runs as any busy worker's does),
    earliest first, at most `limit`; and the latest of them (None: none came)."""
    if now - since <= LATE_GRACE:
        # The common case, on every finish (a call shorter than a second): no slot can have
        # come after `since` and be past its grace, which is never shorter.
        return [], None
    following = _following(endpoint, slot)
    grace = late_grace(baseline_period(endpoint.spec.schedule, now))
    _, first = _around(endpoint, following, since)
    latest, _ = _around(endpoint, first, now - grace)
    came: list[datetime] = []
    at = first
    while latest is not None and at <= latest and len(came) < limit:
        came.append(at)
        at = _following(endpoint, at)
    return came, latest


def on_grid(source: ScheduleSource, slot: datetime | None) -> bool:
    """Whether a planned call (its source and `NextRun.slot`) stands for a baseline grid slot:
    planned by the baseline, or by it and then pushed later by the floor or the min clamp
    (which keep the slot). Hints, one-shots, backoff, `Retry-After` and the max clamp plan
    calls of their own, which no catch-up rule concerns."""
    return source is ScheduleSource.BASELINE or (
        source is ScheduleSource.CLAMPED_MIN and slot is not None
    )


def due_at(claim: Claim) -> datetime:
    """When the run of `claim` was due, to measure its lateness from: a baseline grid slot at
    its own call time (its jitter), however the floor, the min clamp or a catch-up moved the
    call later; any other call (a hint, backoff, a queued run) when it was planned."""
    if claim.call_at is not None and on_grid(claim.schedule_source, claim.slot_at):
        return _call_time(claim.endpoint, claim.slot_at)
    return claim.call_at or claim.slot_at


def missed(
    next_run_at: datetime | None, source: ScheduleSource, slot: datetime | None, now: datetime
) -> bool:
    """Whether a planned call may be a missed baseline slot: it stands for a grid slot
    (`on_grid`) and was due more than `LATE_GRACE` ago; `catch_up` then decides. (Written on
    plain values, the endpoint's `next_run_at`, `next_run_source` and `next_slot_at`.)"""
    return on_grid(source, slot) and next_run_at is not None and next_run_at < now - LATE_GRACE


def catch_up(endpoint: Endpoint, now: datetime) -> NextRun | None:
    """For an endpoint about to be claimed whose planned baseline slot was missed (the
    scheduler was down or far behind): the slot of the same grid its catch-up rule runs
    instead (the latest missed one, now) or waits for (the next one); None when the planned
    slot still runs, now.

    The grid is continued from the planned slot rather than re-planned from the last run: a
    new interval endpoint's grid starts at its first planned slot, before any run. A slot in a
    quiet window is not caught up: the endpoint is planned as the governor plans it now."""
    slot = endpoint.next_slot
    planned = (endpoint.next_run_at, endpoint.next_run_source, endpoint.next_slot_at)
    if slot is None or not missed(*planned, now):
        return None
    chosen, at = _slot_from(endpoint, slot, now)
    if chosen == slot:
        return None
    if endpoint.spec.quiet and window_at(endpoint.spec.quiet, chosen) is not None:
        # Never caught up into a quiet window: the window's skipped run, or the slot after it.
        return _quieted(endpoint, now)
    return NextRun(at, ScheduleSource.BASELINE, chosen if chosen != at else None)
