"""Structured log fields reach the output in both formats."""

from __future__ import annotations

import json
import logging

from adapters.logs import JsonFormatter, TextFormatter


def _record(**extra: object) -> logging.LogRecord:
    record = logging.makeLogRecord({"name": "scheduler.worker", "levelno": 20, "levelname": "INFO"})
    record.msg = "claimed"
    for key, value in extra.items():
        setattr(record, key, value)
    return record


def test_json_lines_carry_the_action_and_other_extras() -> None:
    entry = json.loads(JsonFormatter().format(_record(action="claim", count=3)))

    assert entry["action"] == "claim"
    assert entry["count"] == 3
    assert entry["message"] == "claimed"
    assert entry["logger"] == "scheduler.worker"


def test_text_lines_end_with_key_value_pairs() -> None:
    line = TextFormatter().format(_record(action="finish", endpoint="etl/fetch"))

    assert line.endswith("claimed action=finish endpoint=etl/fetch")


def test_records_without_extras_stay_plain() -> None:
    assert TextFormatter().format(_record()).endswith("scheduler.worker: claimed")
