"""The freshness benchmark's own pieces (`bench.freshness`): its sources change as Poisson
processes and are measured against their true rate, and its scripted model reads the brief's
change rate as a sensible model would. The planners it runs are tested where they live."""

from __future__ import annotations

import math
import random

import pytest

from bench.freshness import (
    ESTIMATION_WINDOW,
    MAX_SECONDS,
    MIN_SECONDS,
    Outcome,
    Upstream,
    _keep_fresh,
    jobs_document,
)
from cronpilot.adapters.jobs_file import parse_declarations
from cronpilot.domain.planning.change_rate import freshness
from tests.support.use_cases import START, Brief


def _brief(change_rate: str, hints: str = "none") -> Brief:
    text = f"Endpoint freshness/s0 (GET)\nHints now: {hints}\nChange rate: {change_rate}\n"
    return Brief("freshness/s0", START, text)


def test_a_source_called_evenly_is_as_fresh_as_the_model_says() -> None:
    source = Upstream((60.0, 60.0), math.inf, random.Random(7))
    for t in range(0, 86_400, 30):
        source.answer(float(t))
    watched = (source.last_ok or 0.0) - (source.first_ok or 0.0)
    # A failed call leaves a gap of two intervals: between every 30 s and every 60 s.
    assert freshness(1 / 60, 60) < source.fresh / watched < freshness(1 / 60, 30)
    # About one call in 20 fails, and the changes seen are those of the calls answered.
    assert 0.03 < 1 - source.answered / source.calls < 0.07
    assert source.changes_seen <= source.version


def test_a_source_that_never_changes_says_so() -> None:
    source = Upstream((math.inf, math.inf), math.inf, random.Random(7))
    bodies = [source.answer(float(t)).body for t in range(0, 600, 20)]
    assert {b["version"] for b in bodies if isinstance(b, dict) and "version" in b} == {0}
    assert source.changes_seen == 0


def test_its_job_declares_the_sources_within_their_clamps_comparing_versions_only() -> None:
    [declared] = parse_declarations(jobs_document(3, rules=True), "bench", ["127.0.0.1/32"])
    spec = declared.endpoints[0]
    assert len(declared.endpoints) == 3
    assert (spec.min_interval_seconds, spec.max_interval_seconds) == (MIN_SECONDS, MAX_SECONDS)
    assert spec.change_ignores == ("seconds_since_change",)
    assert len(spec.rules) == 3


def test_the_scripted_model_calls_about_once_per_change() -> None:
    [call] = _keep_fresh(None, _brief("changes about every 4 min (12 changes seen in 50 calls)"))
    assert call.arguments["interval_seconds"] == 240
    assert _keep_fresh(None, _brief("changes about every 22 s (9 changes seen in 20 calls)")) == []
    [quiet] = _keep_fresh(None, _brief("no change seen (0 changes seen in 30 calls)"))
    assert quiet.arguments["interval_seconds"] == 40
    assert _keep_fresh(None, _brief("not estimated (fewer than two answers)")) == []


def test_the_last_window_counts_the_gap_still_open_at_the_end() -> None:
    """A source that never changes, called every 30 min, is fresh all of every window after
    the switch, the last one too, though its last gap ends after the run."""
    seconds = 2 * 3 * ESTIMATION_WINDOW
    source = Upstream((math.inf, math.inf), seconds / 2, random.Random(7))
    source.rng.random = lambda: 1.0  # type: ignore[method-assign]  # no call fails
    for t in range(0, int(seconds), 1800):
        source.answer(float(t))
    source.close(seconds)
    outcome = Outcome([source], seconds)
    assert [outcome.window(slot)[0] for slot in range(3)] == pytest.approx([1.0, 1.0, 1.0])
