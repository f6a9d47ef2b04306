"""How far ahead a pause may end: one rule for the CLI, the API, the console and the MCP
server, so none accepts what another refuses (the pause use case applies it to every one);
and when a job's pause keeps its endpoints from running."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.model import Endpoint, Pause
from cronpilot.domain.schedule.schedule import MAX_SECONDS

MAX_PAUSE = timedelta(seconds=MAX_SECONDS)
"""Ten years, as every other schedule bound: further ahead is a typo or `until resumed`, and
the governor's arithmetic from the pause's end must stay inside the calendar."""

NOT_FUTURE = "is not in the future"
TOO_FAR = "is more than ten years ahead"


def pause_end(until: datetime, now: datetime, where: str = "until") -> datetime:
    """`until` as the end of a pause asked for at `now`; raises `InvalidConfig(where, …)`
    for a time with no offset, not after `now`, or more than `MAX_PAUSE` ahead."""
    if until.tzinfo is None or until.utcoffset() is None:
        raise InvalidConfig(where, "has no offset (Z, +01:00)")
    if until <= now:
        raise InvalidConfig(where, NOT_FUTURE)
    # Aware datetimes subtract without leaving the calendar, even at its ends.
    if until - now > MAX_PAUSE:
        raise InvalidConfig(where, TOO_FAR)
    return until


def pause_length(seconds: float, where: str) -> float:
    """`seconds` as how long a pause lasts, bounded as `pause_end`; raises
    `InvalidConfig(where, …)` before `now + seconds` could overflow."""
    if not math.isfinite(seconds) or seconds <= 0:
        raise InvalidConfig(where, "must be a positive duration")
    if seconds > MAX_PAUSE.total_seconds():
        raise InvalidConfig(where, TOO_FAR)
    return seconds


def pause_end_after(seconds: float, now: datetime, where: str) -> datetime:
    """The end of a pause of `seconds` from `now` (`pause_length`, `pause_end`)."""
    return pause_end(now + timedelta(seconds=pause_length(seconds, where)), now, where)


def holds(pause: Pause | None, now: datetime) -> bool:
    """Whether `pause` is in force at `now`: until resumed, or until a time still ahead."""
    return pause is not None and (pause.until is None or pause.until > now)


def job_holds(endpoint: Endpoint, now: datetime) -> bool:
    """Whether the pause of the endpoint's job keeps it from running at `now`: neither its
    slots nor its queued runs are claimed (`domain.runs.claiming.pick_claims`), and a DAG run
    reaching it skips it as paused. Its own pause, kept underneath, is not looked at."""
    return holds(endpoint.job_pause, now)


def held_until(endpoint: Endpoint, at: datetime) -> datetime | None:
    """When something due at `at` may run, seen from its job's pause alone: `at` itself, the
    end of the job's pause when that is later, or None while the job is paused until resumed.
    Needs no `now`: a pause that ended before `at` changes nothing."""
    pause = endpoint.job_pause
    if pause is None:
        return at
    if pause.until is None:
        return None
    return max(at, pause.until)


def job_pause_ended(endpoint: Endpoint, now: datetime) -> datetime | None:
    """When the pause of the endpoint's job ended, if it was a pause until a time that has come
    by `now` (it stays on the job until the next pause or resume); else None."""
    pause = endpoint.job_pause
    if pause is None or pause.until is None or pause.until > now:
        return None
    return pause.until


def counted_from(endpoint: Endpoint, slot: datetime, now: datetime) -> datetime:
    """The moment a slot's lateness and its being missed are counted from: the slot itself, or
    the end of its job's pause when the slot fell while the pause held (a paused job is neither
    late nor missing its slots; its next slot counts from the resume)."""
    ended = job_pause_ended(endpoint, now)
    return slot if ended is None else max(slot, ended)
