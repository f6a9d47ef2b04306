"""The example jobs with their rules taken out, so that the heuristic tunes the endpoints the
rules would, for ten simulated minutes: no analyst's change refused by the hourly limit, and
no alternation (`tests.e2e.ten_minutes`)."""

from __future__ import annotations

import pytest

from tests.e2e.ten_minutes import ten_minutes_of_the_examples


# Ten simulated minutes take 20 to 50 s alone; on a loaded machine, several minutes.
@pytest.mark.timeout(600)
async def test_ten_minutes_of_the_examples_with_the_heuristic_only_never_reach_the_hourly_limit(
    sqlite_url: str,
) -> None:
    await ten_minutes_of_the_examples(sqlite_url, rules=False)
