"""jobs.yaml: a job's `budget` of calls and an endpoint's `objective`, read, exported and
refused in one line when they cannot hold."""

from __future__ import annotations

import pytest

from cronpilot.adapters.jobs_export import export_document
from cronpilot.adapters.jobs_file import parse_declarations
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.model import DEFAULT_FLOOR_SECONDS, Objective
from cronpilot.domain.ports import JobDeclaration

JOBS = """\
jobs:
  - name: feeds
    budget: 600/h
    endpoints:
      - name: news
        url: https://93.184.216.34/news
        interval: 10s
        max_interval: 1h
        objective: age
      - name: prices
        url: https://93.184.216.34/prices
        interval: 10s
        max_interval: 30m
"""


def parse(text: str) -> JobDeclaration:
    [declaration] = parse_declarations(text, "jobs.yaml", [], {}, DEFAULT_FLOOR_SECONDS)
    return declaration


def test_a_budget_and_objectives_are_read_and_exported_as_written() -> None:
    declared = parse(JOBS)
    news, prices = declared.endpoints

    assert declared.job.budget == "600/h"
    assert (news.objective, prices.objective) == (
        Objective.AGE,
        Objective.FRESHNESS,
    )
    exported = export_document([declared], with_secrets=True)
    assert "  budget: 600/h\n" in exported
    assert exported.count("objective: age") == 1 and "objective: freshness" not in exported
    again = parse(exported)
    assert (again.job.declared, again.endpoints) == (declared.job.declared, declared.endpoints)


def test_without_a_budget_the_declared_schedules_are_the_budget() -> None:
    declared = parse(JOBS.replace("    budget: 600/h\n", ""))
    assert declared.job.budget is None
    assert "budget" not in export_document([declared], with_secrets=True)


@pytest.mark.parametrize("budget", ["10/s", "1.5/m", "600/h", "20000/d"])
def test_a_budget_is_calls_per_second_minute_hour_or_day(budget: str) -> None:
    assert parse(JOBS.replace("600/h", budget)).job.budget == budget


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            JOBS.replace("600/h", "1/h"),
            "job 'feeds' field 'budget': budget 1/h is below the 3/h the endpoints' "
            "max_interval allows",
        ),
        (
            JOBS.replace("600/h", "600 per hour"),
            "job 'feeds' field 'budget': ",
        ),
        (JOBS.replace("600/h", "0/h"), "is not a positive number of calls per s, m, h or d"),
        (JOBS.replace("objective: age", "objective: speed"), "field 'objective'"),
    ],
)
def test_a_budget_or_objective_that_cannot_hold_is_refused_in_one_line(
    text: str, expected: str
) -> None:
    with pytest.raises(InvalidConfig) as raised:
        parse(text)
    said = str(raised.value)
    assert expected in said, said
    assert "\n" not in said.strip()
