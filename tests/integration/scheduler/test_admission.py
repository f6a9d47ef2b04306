"""The admission policy: how many slots a worker claims now, as a table of cases."""

from __future__ import annotations

import pytest

from cronpilot.scheduler.admission import Admission

POLICY = Admission(concurrency=100, batch_size=50)
"""Low water 5: a tenth of the smaller of batch and concurrency."""


@pytest.mark.parametrize(
    ("calling", "recording", "backlog", "quiet", "expected"),
    [
        pytest.param(0, 0, False, False, 50, id="idle: a whole batch"),
        pytest.param(0, 0, True, True, 50, id="idle, backlog in the quiet time: a whole batch"),
        pytest.param(80, 0, False, False, 20, id="the room left"),
        pytest.param(100, 0, False, False, 0, id="full of calls"),
        pytest.param(120, 0, False, False, 0, id="over: DAG dependants started beyond the room"),
        pytest.param(60, 40, False, False, 40, id="recording holds no call"),
        pytest.param(60, 140, False, False, 0, id="but no more than concurrency recording"),
        pytest.param(0, 198, False, False, 2, id="twice concurrency in hand at most"),
        pytest.param(97, 0, True, True, 0, id="backlog, quiet, under low water: held back"),
        pytest.param(95, 0, True, True, 5, id="backlog, quiet, at low water: claimed"),
        pytest.param(97, 0, True, False, 3, id="backlog after the quiet time: claimed"),
        pytest.param(97, 0, False, True, 3, id="quiet without a backlog: claimed"),
    ],
)
def test_how_many_to_claim(
    calling: int, recording: int, backlog: bool, quiet: bool, expected: int
) -> None:
    assert (
        POLICY.to_claim(calling=calling, recording=recording, backlog=backlog, quiet=quiet)
        == expected
    )


@pytest.mark.parametrize(
    ("concurrency", "batch_size", "low_water"),
    [(100, 100, 10), (100, 30, 3), (5, 100, 1), (1, 1, 1)],
)
def test_low_water_is_a_tenth_of_the_smaller_of_batch_and_concurrency_and_at_least_one(
    concurrency: int, batch_size: int, low_water: int
) -> None:
    assert Admission(concurrency, batch_size).low_water == low_water
