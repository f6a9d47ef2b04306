"""The field types of a jobs document: names, durations, sizes, counts and their bounds."""

from __future__ import annotations

import math
import re
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
)

from cronpilot.adapters.durations import parse_duration
from cronpilot.domain.planning.approvals import (
    MAX_APPROVAL_TIMEOUT_SECONDS,
)
from cronpilot.domain.planning.call_budget import parse_budget
from cronpilot.domain.runs.excerpt import excerpt
from cronpilot.domain.schedule.schedule import MAX_SECONDS

_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*(b|kb|mb|kib|mib)?", re.IGNORECASE)
_SIZE_UNITS = {"b": 1, "kb": 1000, "mb": 1000**2, "kib": 1024, "mib": 1024**2}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
_MAX_COUNT = 1_000_000
"""Bound on failure counts (`notify.after`, `pause_after`): a database integer holds it."""
MAX_RESPONSE_SIZE = 1024**3
"""1 GiB: more than a worker should hold in memory for one answer, and within the INTEGER
column of every store (PostgreSQL's holds less than 2 GiB, SQLite's overflows past 2**63)."""


def parse_size(value: object) -> int:
    """Bytes from a number or a size string; raises `ValueError` for anything else."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and (match := _SIZE.fullmatch(value.strip())):
        amount, unit = match.groups()
        size = float(amount) * _SIZE_UNITS[(unit or "b").lower()]
        # So many digits that the float is infinite: no integer to make of it.
        if math.isfinite(size):
            return int(size)
    raise ValueError(f"{excerpt(repr(value))} is not a size (bytes, or e.g. '100KB', '2MiB')")


def _check_name(value: object) -> object:
    if isinstance(value, str) and not _NAME.fullmatch(value):
        raise ValueError(
            "names are letters, digits, '-', '_' and '.' (at most 100), starting with a "
            "letter or digit"
        )
    return value


def _window(value: object) -> float:
    """A duration of 0 or more; `-1s` is refused as negative rather than as not a duration."""
    if isinstance(value, str) and value.strip().startswith("-"):
        raise ValueError("must be 0 or more (0: no missed slot is run late)")
    return parse_duration(value)


def _positive_duration(value: object) -> float:
    """A duration above 0; `-5m` and `0s` are refused as such rather than as not a duration."""
    if isinstance(value, str) and value.strip().startswith("-"):
        raise ValueError("must be more than 0, e.g. '10m'")
    seconds = parse_duration(value)
    if seconds <= 0:
        raise ValueError("must be more than 0, e.g. '10m'")
    return seconds


def _upper(value: object) -> object:
    return value.upper() if isinstance(value, str) else value


def _not_bool(value: object) -> object:
    # pydantic reads `true` as 1 for an int: a count written as a boolean is a mistake.
    if isinstance(value, bool):
        raise ValueError("expected a whole number, not true/false")
    return value


def _retry_wait(seconds: float) -> float:
    """A retry's wait is bounded like an interval: a retry never starts after its endpoint's
    next slot, and no schedule's slots are further apart, so a longer wait is a mistake (and
    `now + wait` would leave the calendar)."""
    if seconds > MAX_SECONDS:
        raise ValueError(
            f"must be at most {MAX_SECONDS / 86400:.0f}d, the longest time between two slots"
        )
    return seconds


def _approval_timeout(seconds: float) -> float:
    if seconds > MAX_APPROVAL_TIMEOUT_SECONDS:
        raise ValueError(
            f"must be at most {MAX_APPROVAL_TIMEOUT_SECONDS / 86400:.0f}d: a request filled "
            "from upstream answers that old is stale"
        )
    return seconds


def _budget(value: str) -> str:
    """`600/h`: calls per s, m, h or d; kept as written
    (`domain.planning.call_budget.parse_budget`)."""
    parse_budget(value)
    return value.strip()


Name = Annotated[str, BeforeValidator(_check_name)]
Duration = Annotated[float, BeforeValidator(parse_duration)]
PositiveDuration = Annotated[Duration, Field(gt=0)]
Size = Annotated[int, BeforeValidator(parse_size), Field(gt=0, le=MAX_RESPONSE_SIZE)]
Count = Annotated[int, BeforeValidator(_not_bool), Field(ge=1, le=_MAX_COUNT)]
Jitter = Annotated[Duration, Field(gt=0, le=MAX_SECONDS)]
RetryWait = Annotated[PositiveDuration, AfterValidator(_retry_wait)]
Window = Annotated[float, BeforeValidator(_window), Field(ge=0, le=MAX_SECONDS)]
CoolDown = Annotated[Duration, Field(ge=0, le=MAX_SECONDS)]
ApprovalTimeout = Annotated[PositiveDuration, AfterValidator(_approval_timeout)]
Budget = Annotated[str, AfterValidator(_budget)]
Watch = Annotated[float, BeforeValidator(_positive_duration), Field(le=MAX_SECONDS)]
Method = Annotated[
    Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"], BeforeValidator(_upper)
]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
