"""Table tests for `store_retry_delay`: a worker retries a failing store from 0.2 s, doubling."""

from __future__ import annotations

import pytest

from cronpilot.domain.runs.outage import store_retry_delay


@pytest.mark.parametrize(
    ("failures", "cap", "expected"),
    [
        (1, 5.0, 0.2),
        (2, 5.0, 0.4),
        (3, 5.0, 0.8),
        (4, 5.0, 1.6),
        (5, 5.0, 3.2),
        (6, 5.0, 5.0),
        (7, 5.0, 5.0),
        (10_000, 5.0, 5.0),
        (1, 0.1, 0.1),
        (3, 60.0, 0.8),
    ],
)
def test_the_wait_doubles_from_a_fifth_of_a_second_up_to_the_cap(
    failures: int, cap: float, expected: float
) -> None:
    assert store_retry_delay(failures, cap) == pytest.approx(expected)


def test_a_custom_first_wait() -> None:
    assert [store_retry_delay(n, 10.0, first_seconds=1.0) for n in (1, 2, 3, 4, 5)] == [
        1.0,
        2.0,
        4.0,
        8.0,
        10.0,
    ]


@pytest.mark.parametrize("failures", [0, -1])
def test_there_is_no_wait_before_a_failure(failures: int) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        store_retry_delay(failures, 5.0)
