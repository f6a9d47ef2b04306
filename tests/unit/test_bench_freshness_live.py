"""The real-time freshness trial's figures (`bench.freshness_live`), on calls made by hand: what
a stretch of calls comes to against the true rates, and what counts as a step back within the
dwell."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta

import pytest

from bench.freshness import Upstream, split_freshness
from bench.freshness_live import figures_of, reversals, span_of
from cronpilot.domain.planning.change_rate import freshness

T0 = datetime(2030, 1, 1, tzinfo=UTC)
DWELL = timedelta(seconds=120)


def test_a_stretch_counts_every_second_of_it_once_the_copy_had_an_answer() -> None:
    rate = 1 / 60
    log = [(10.0, False), (20.0, True), (30.0, None), (40.0, False), (45.0, True)]
    whole = span_of(log, rate, 0.0, 50.0)
    assert (whole.calls, whole.answered, whole.changes_seen) == (5, 4, 2)
    # From the first answer: the gaps between answers, then the copy held until the end.
    assert whole.watched_seconds == 40.0
    expected = sum(freshness(rate, gap) * gap for gap in (10.0, 20.0, 5.0, 5.0))
    assert whole.fresh_seconds == pytest.approx(expected)
    assert whole.shortest_gap == 5.0
    # From 25 s on: the gap that straddles it counts its part within, the failed call too.
    later = span_of(log, rate, 25.0, 50.0)
    assert (later.calls, later.answered, later.changes_seen) == (3, 2, 1)
    assert later.watched_seconds == 25.0
    straddled = freshness(rate, 20.0) * 20.0 - freshness(rate, 5.0) * 5.0
    assert later.fresh_seconds == pytest.approx(straddled + freshness(rate, 5.0) * 5.0 * 2)


def test_a_source_that_never_changes_is_always_fresh() -> None:
    assert span_of([(5.0, False), (70.0, False)], 0.0, 0.0, 100.0).fresh == 1.0


def test_the_figures_agree_with_the_sources_own_bookkeeping() -> None:
    sources = [
        Upstream((mean, mean), math.inf, random.Random(i), failure_share=0.0)
        for i, mean in enumerate((30.0, 600.0))
    ]
    for t in range(0, 3600, 20):
        for source in sources:
            source.answer(float(t))
    rates = [1 / 30, 1 / 600]
    # Until the last answer: no copy held past it, as the sources count whole gaps.
    figures = figures_of([s.log for s in sources], rates, 0.0, 3580.0)
    watched = [(s.last_ok or 0.0) - (s.first_ok or 0.0) for s in sources]
    kept = [s.fresh / w for s, w in zip(sources, watched, strict=True)]
    assert figures.fresh == pytest.approx(sum(kept) / len(kept))
    assert figures.changes_seen == sum(s.changes_seen for s in sources)
    even, best = split_freshness(rates, figures.calls_per_second)
    assert (figures.even, figures.best) == (even, best)
    # Called evenly every 20 s, the two sources are the even split (of 180 calls in 3580 s).
    assert figures.share == pytest.approx(0.0, abs=0.05)


def test_a_step_back_within_the_dwell_is_a_reversal_and_one_after_it_is_not() -> None:
    at = [T0 + timedelta(seconds=s) for s in (0, 60, 300, 330)]
    # 20 → 28 (slower), 28 → 17 (faster) 60 s later: back within the dwell.
    assert reversals([(at[0], 28.0), (at[1], 17.0)], 20.0, DWELL) == 1
    # The same way twice is no reversal, nor a step back after the dwell.
    assert reversals([(at[0], 28.0), (at[1], 39.0), (at[2], 20.0)], 20.0, DWELL) == 0
    assert reversals([(at[2], 10.0), (at[3], 6.0)], 20.0, DWELL) == 0
