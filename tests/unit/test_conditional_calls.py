"""Which endpoints call conditionally (GET, unless `conditional: false` or a validator header of
their own), and the jobs file's `conditional` switch: refused off GET, exported when off."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cronpilot.adapters.jobs_export import export_document
from cronpilot.adapters.jobs_file import parse_declarations
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.model import EndpointSpec
from cronpilot.domain.runs.conditional_calls import calls_conditionally
from tests.contract.builders import spec

NETWORKS = ["127.0.0.1/32"]
BASE = spec("e")


@pytest.mark.parametrize(
    ("declared", "conditional"),
    [
        (BASE, True),
        (replace(BASE, conditional=False), False),
        (replace(BASE, method="POST"), False),
        (replace(BASE, method="HEAD"), False),
        (replace(BASE, headers={"if-none-match": '"mine"'}), False),
        (replace(BASE, headers={"If-Modified-Since": "Sat, 28 Nov 2026 08:00:00 GMT"}), False),
        (replace(BASE, headers={"Accept": "application/json"}), True),
    ],
)
def test_get_endpoints_call_conditionally_unless_told_otherwise(
    declared: EndpointSpec, conditional: bool
) -> None:
    assert calls_conditionally(declared) is conditional


def _document(extra: str, method: str = "GET") -> str:
    return f"""
jobs:
  - name: shop
    endpoints:
      - name: prices
        url: https://api.example.com/prices
        method: {method}
        interval: 1m
        {extra}
"""


def test_conditional_on_a_post_is_refused_in_one_line() -> None:
    with pytest.raises(InvalidConfig) as refused:
        parse_declarations(_document("conditional: true", "POST"), "jobs.yaml", NETWORKS, {})

    assert str(refused.value) == (
        "jobs.yaml: job 'shop' endpoint 'prices' field 'conditional': "
        "conditional requests are for GET endpoints"
    )


@pytest.mark.parametrize(("extra", "conditional"), [("", True), ("conditional: false", False)])
def test_the_switch_is_read_and_exported_only_when_off(extra: str, conditional: bool) -> None:
    declarations = parse_declarations(_document(extra), "jobs.yaml", NETWORKS, {})

    exported = export_document(declarations, with_secrets=False)

    assert declarations[0].endpoints[0].conditional is conditional
    assert ("conditional: false" in exported) is not conditional
    again = parse_declarations(exported, "exported.yaml", NETWORKS, {})
    assert again[0].endpoints == declarations[0].endpoints
