"""Structured log fields reach the output in both formats."""

from __future__ import annotations

import ast
import json
import logging
import sys
from pathlib import Path

from cronpilot.adapters.logs import JsonFormatter, TextFormatter
from cronpilot.domain.log_extra import log_extra

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("domain", "adapters", "scheduler", "planner")


def _record(**extra: object) -> logging.LogRecord:
    record = logging.makeLogRecord(
        {"name": "cronpilot.scheduler.worker", "levelno": 20, "levelname": "INFO"}
    )
    record.msg = "claimed"
    for key, value in extra.items():
        setattr(record, key, value)
    return record


def test_json_lines_carry_the_action_and_other_extras() -> None:
    entry = json.loads(JsonFormatter().format(_record(action="claim", count=3)))

    assert entry["action"] == "claim"
    assert entry["count"] == 3
    assert entry["message"] == "claimed"
    assert entry["logger"] == "cronpilot.scheduler.worker"


def test_text_lines_end_with_key_value_pairs() -> None:
    line = TextFormatter().format(_record(action="finish", endpoint="etl/fetch"))

    assert line.endswith("claimed action=finish endpoint=etl/fetch")


def test_records_without_extras_stay_plain() -> None:
    assert TextFormatter().format(_record()).endswith("scheduler.worker: claimed")


def test_an_extra_cannot_pass_for_the_records_own_fields() -> None:
    entry = json.loads(JsonFormatter().format(_record(level="DEBUG", logger="x", time="then")))

    assert (entry["level"], entry["logger"]) == ("INFO", "cronpilot.scheduler.worker")
    assert entry["time"] != "then"


def _reserved_names() -> frozenset[str]:
    """What `extra` must not name: what logging refuses (the attributes of a record, plus the
    two its formatters add) and what the JSON formatter writes for the record itself."""
    try:
        raise ValueError("so that the JSON line has its exception field")
    except ValueError:
        record = logging.LogRecord("n", logging.ERROR, "p.py", 1, "m", None, sys.exc_info())
    own = json.loads(JsonFormatter().format(record))
    return frozenset(vars(record)) | {"message", "asctime"} | frozenset(own)


def _calls_log_extra(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and getattr(node.func, "id", None) == "log_extra"


def _extra_keys() -> list[tuple[str, int, str | None]]:
    """(file, line, key) of every key of every `extra=` in the code; None for a key the scan
    cannot read (an `extra` that is not a dict literal, or a `**` in one)."""
    found: list[tuple[str, int, str | None]] = []
    for layer in LAYERS:
        for path in sorted((ROOT / layer).rglob("*.py")):
            where = str(path.relative_to(ROOT))
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.keyword) or node.arg != "extra":
                    continue
                if isinstance(node.value, ast.Constant) or _calls_log_extra(node.value):
                    # pydantic's `extra="forbid"`, or built by `log_extra`, which cannot clash.
                    continue
                if not isinstance(node.value, ast.Dict):
                    found.append((where, node.value.lineno, None))
                    continue
                found.extend(
                    (where, node.value.lineno, key.value)
                    if isinstance(key, ast.Constant) and isinstance(key.value, str)
                    else (where, node.value.lineno, None)
                    for key in node.value.keys
                )
    return found


def test_no_extra_names_a_reserved_log_record_attribute() -> None:
    extras = _extra_keys()
    reserved = _reserved_names()

    assert len(extras) > 50, "the scan finds the code's extras"
    assert {"created", "name", "msg", "levelname", "time"} <= reserved
    assert [extra for extra in extras if extra[2] is None] == [], "keys the scan cannot read"
    assert [extra for extra in extras if extra[2] in reserved] == []


def test_log_extra_keeps_a_field_named_like_a_record_attribute() -> None:
    extra = log_extra("apply", created=3, count=1)

    record = logging.getLogger("cronpilot.test").makeRecord(
        "n", logging.INFO, "p.py", 1, "m", None, None, extra=extra
    )

    assert extra == {"action": "apply", "field_created": 3, "count": 1}
    assert record.field_created == 3
