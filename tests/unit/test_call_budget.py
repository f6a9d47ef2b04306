"""The best split of a job's calls (`domain.planning.call_budget`) against brute force."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cronpilot.domain.model import Objective
from cronpilot.domain.planning.call_budget import (
    BudgetError,
    Source,
    best_intervals,
    even_intervals,
    parse_budget,
)
from cronpilot.domain.planning.change_rate import age, freshness


def _value(sources: list[Source], intervals: list[float], budget: float) -> float:
    scale = len(sources) / budget
    return sum(
        freshness(s.rate, i) if s.objective is Objective.FRESHNESS else -age(s.rate, i) / scale
        for s, i in zip(sources, intervals, strict=True)
    )


def _brute(sources: list[Source], budget: float, steps: int) -> float:
    """The best value over a grid of call rates for all sources but the last, which takes
    what is left (when its bounds allow)."""
    grids = [
        [
            1 / s.max_seconds + (1 / s.min_seconds - 1 / s.max_seconds) * k / steps
            for k in range(steps + 1)
        ]
        for s in sources[:-1]
    ]
    last = sources[-1]
    best = -float("inf")
    for rates in itertools.product(*grids):
        rest = budget - sum(rates)
        if not 1 / last.max_seconds <= rest <= 1 / last.min_seconds:
            continue
        intervals = [1 / f for f in (*rates, rest)]
        best = max(best, _value(sources, intervals, budget))
    return best


rates = st.sampled_from([0.0, 1 / 86_400, 1 / 3600, 1 / 600, 1 / 60, 1 / 10, 1 / 3])
objectives = st.sampled_from(list(Objective))


@settings(max_examples=40, deadline=None)
@given(
    picked=st.lists(st.tuples(rates, objectives), min_size=2, max_size=3),
    every=st.sampled_from([5.0, 20.0, 60.0]),
)
def test_no_split_on_a_grid_beats_the_best_split(
    picked: list[tuple[float, Objective]], every: float
) -> None:
    sources = [Source(rate, 2.0, 3600.0, objective) for rate, objective in picked]
    budget = len(sources) / every
    found = best_intervals(sources, budget)
    assert sum(1 / i for i in found) == pytest.approx(budget, rel=1e-6)
    assert all(2.0 - 1e-9 <= i <= 3600.0 + 1e-9 for i in found)
    value = _value(sources, found, budget)
    steps = 400 if len(sources) == 2 else 60
    assert value >= _brute(sources, budget, steps) - 1e-3
    assert value >= _value(sources, even_intervals(sources, budget), budget) - 1e-9


def test_the_best_split_gives_up_what_changes_too_fast_and_what_never_changes() -> None:
    """Cho & Garcia-Molina's example: not proportional to the rate."""
    sources = [
        Source(1.0, 1.0, 3600.0),
        Source(1 / 60, 1.0, 3600.0),
        Source(0.0, 1.0, 3600.0),
    ]
    fast, steady, silent = best_intervals(sources, 3 / 20)
    assert silent == pytest.approx(3600.0)
    assert steady < fast
    assert steady < 20.0


def test_a_budget_below_what_max_interval_allows_is_one_line() -> None:
    with pytest.raises(BudgetError, match=r"^a budget of 1/h is below the 2/h"):
        best_intervals([Source(0.1, 1.0, 3600.0)] * 2, 1 / 3600)


def test_budgets_read_as_calls_per_unit() -> None:
    assert parse_budget("600/h") == pytest.approx(1 / 6)
    assert parse_budget("2/min") == pytest.approx(1 / 30)
    with pytest.raises(BudgetError, match="not a positive number"):
        parse_budget("0/h")


def test_a_source_changing_far_faster_than_it_is_called_spends_the_budget_not_more() -> None:
    """Its gain per call is flat (about 1/λ whatever the interval): it once took its minimum
    interval, six times the budget."""
    intervals = best_intervals([Source(1e6, 10, 300), Source(0.0, 86_400, 86_400)], 1 / 60)
    assert sum(1 / i for i in intervals) == pytest.approx(1 / 60)
