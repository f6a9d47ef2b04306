"""`bench.soak.judge`: a column that swings within its window is flat, one that keeps growing
past the peak of the day after its window filled is not."""

from __future__ import annotations

from bench.soak import Sample, judge

WINDOWS = {"rule_evaluations": 0.5}
STEP = 0.125


def samples(values: list[int]) -> list[Sample]:
    return [
        Sample(days=(n + 1) * STEP, rows={"rule_evaluations": value}, size_bytes=1000)
        for n, value in enumerate(values)
    ]


def verdict(values: list[int]) -> bool | None:
    [rules] = [v for v in judge(samples(values), WINDOWS) if v.column == "rule_evaluations"]
    return rules.flat


def test_a_count_swinging_in_its_window_is_flat() -> None:
    # The soak's own figures, day 0.13 to 2: busier and quieter hours of the planner.
    swinging = [9, 19, 30, 58, 88, 82, 97, 87, 69, 73, 66, 61, 70, 79, 86, 92, 96]
    assert verdict(swinging) is True


def test_a_count_growing_past_its_first_peak_is_not() -> None:
    leaking = [10 * n for n in range(1, 18)]
    assert verdict(leaking) is False


def test_a_run_that_ends_within_a_day_of_the_window_is_not_judged() -> None:
    assert verdict([9, 19, 30, 58, 88, 82]) is None
