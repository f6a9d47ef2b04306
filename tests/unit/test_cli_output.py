"""Machine-readable output: JSON or YAML of the same data, floats without binary noise."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
import yaml

from cronpilot.adapters.cli.output import OutputFormat, print_data

DATA = {
    "rate": 0.1 + 0.2,
    "weight": 0.7 * 0.7,
    "confidence": 0.8130000000000001,
    "exact": 1234.5678,
    "tiny": 1.5e-07,
    "count": 3,
    "at": datetime(2026, 11, 23, 8, 0, tzinfo=UTC),
    "nested": [{"ms": 12.300000000000001}, None, True, "0.1"],
}
EXPECTED = {
    "rate": 0.3,
    "weight": 0.49,
    "confidence": 0.813,
    "exact": 1234.5678,
    "tiny": 1.5e-07,
    "count": 3,
    "at": "2026-11-23 08:00:00+00:00",
    "nested": [{"ms": 12.3}, None, True, "0.1"],
}


def test_json_rounds_floats_to_significant_digits(capsys: pytest.CaptureFixture[str]) -> None:
    print_data(OutputFormat.JSON, DATA)
    printed = capsys.readouterr().out
    assert json.loads(printed) == EXPECTED
    assert "0000000" not in printed and "9999999" not in printed


def test_yaml_holds_the_same_data_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    print_data(OutputFormat.YAML, DATA)
    printed = capsys.readouterr().out
    assert yaml.safe_load(printed) == EXPECTED
    assert printed.startswith("rate: 0.3\n")
