"""jobs.yaml: the overlap policy (`overlap: skip | queue_one | allow`) of a job and its
endpoints."""

from __future__ import annotations

import pytest

from cronpilot.adapters.jobs_export import export_document
from cronpilot.adapters.jobs_file import parse_declarations
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.model import DEFAULT_FLOOR_SECONDS, EndpointSpec, Overlap

JOBS = """\
jobs:
  - name: shop
    overlap: queue_one
    endpoints:
      - name: stock
        url: https://93.184.216.34/stock
        interval: 5s
      - name: report
        url: https://93.184.216.34/report
        interval: 5s
        overlap: skip
      - name: load
        url: https://93.184.216.34/load
        depends_on: [stock]
"""


def parse(text: str) -> list[EndpointSpec]:
    [declaration] = parse_declarations(text, "jobs.yaml", [], {}, DEFAULT_FLOOR_SECONDS)
    return list(declaration.endpoints)


def test_an_endpoint_takes_the_jobs_policy_unless_it_sets_its_own() -> None:
    stock, report, _ = parse(JOBS)
    [plain] = parse(JOBS.replace("    overlap: queue_one\n", "").split("      - name: report")[0])

    assert (stock.overlap, report.overlap, plain.overlap) == (
        Overlap.QUEUE_ONE,
        Overlap.SKIP,
        Overlap.SKIP,
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            JOBS.replace("overlap: queue_one", "overlap: allow"),
            "job 'shop' field 'overlap': 'allow' cannot hold on endpoint 'stock': other endpoints",
        ),
        (
            JOBS.replace("depends_on: [stock]", "depends_on: [stock]\n        overlap: skip"),
            "job 'shop' endpoint 'load' field 'overlap': an endpoint with depends_on runs after",
        ),
        (JOBS.replace("overlap: skip", "overlap: sometimes"), "field 'overlap'"),
    ],
)
def test_a_policy_that_cannot_hold_is_refused_in_one_line(text: str, expected: str) -> None:
    with pytest.raises(InvalidConfig) as caught:
        parse(text)

    assert expected in str(caught.value)
    assert "\n" not in str(caught.value)


def test_export_writes_a_policy_other_than_skip_and_applies_back() -> None:
    [declaration] = parse_declarations(JOBS, "jobs.yaml", [], {}, DEFAULT_FLOOR_SECONDS)

    exported = export_document([declaration], with_secrets=False)

    assert exported.count("overlap: queue_one") == 1
    assert parse(exported)[0].overlap is Overlap.QUEUE_ONE


def test_allow_is_taken_where_no_endpoint_depends_on_it_and_applies_back() -> None:
    text = JOBS.replace("overlap: skip", "overlap: allow")
    [declaration] = parse_declarations(text, "jobs.yaml", [], {}, DEFAULT_FLOOR_SECONDS)

    exported = export_document([declaration], with_secrets=False)

    assert [spec.overlap for spec in declaration.endpoints][:2] == [
        Overlap.QUEUE_ONE,
        Overlap.ALLOW,
    ]
    assert exported.count("overlap: allow") == 1
    assert [spec.overlap for spec in parse(exported)] == [
        spec.overlap for spec in declaration.endpoints
    ]
