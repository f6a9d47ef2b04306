"""How far ahead a pause may end: the one bound the CLI, API, console, MCP and rules share."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.schedule.pauses import MAX_PAUSE, pause_end, pause_end_after

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("seconds", "reason"),
    [
        (0, "must be a positive duration"),
        (-60, "must be a positive duration"),
        (float("nan"), "must be a positive duration"),
        (float("inf"), "must be a positive duration"),
        (MAX_PAUSE.total_seconds() + 1, "is more than ten years ahead"),
        # 99999999999 minutes: past `timedelta`'s own range.
        (99999999999 * 60, "is more than ten years ahead"),
    ],
)
def test_a_pause_length_out_of_range_is_refused_naming_where(seconds: float, reason: str) -> None:
    with pytest.raises(InvalidConfig) as raised:
        pause_end_after(seconds, NOW, "minutes")
    assert str(raised.value) == f"minutes: {reason}"


def test_a_pause_may_end_exactly_ten_years_ahead() -> None:
    assert pause_end_after(MAX_PAUSE.total_seconds(), NOW, "for") == NOW + MAX_PAUSE
    assert pause_end(NOW + MAX_PAUSE, NOW) == NOW + MAX_PAUSE
    with pytest.raises(InvalidConfig, match=r"^until: is more than ten years ahead$"):
        pause_end(NOW + MAX_PAUSE + timedelta(microseconds=1), NOW)
