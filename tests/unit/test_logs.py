"""Structured log fields reach the output in both formats."""

from __future__ import annotations

import ast
import json
import logging
import re
import sys
from pathlib import Path
from typing import get_args

from cronpilot.adapters.logs import JsonFormatter, TextFormatter
from cronpilot.domain.log_extra import LogAction, log_extra

ROOT = Path(__file__).resolve().parents[2]
LAYERS = (
    "domain",
    "usecases",
    "runtime",
    "adapters",
    "scheduler",
    "planner",
    "migrations",
    "harness",
)


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


def _log_calls() -> list[tuple[str, int, ast.expr]]:
    """(file, line, value) of every `extra=` in the code, pydantic's `extra="forbid"` aside."""
    found: list[tuple[str, int, ast.expr]] = []
    for layer in LAYERS:
        for path in sorted((ROOT / layer).rglob("*.py")):
            where = str(path.relative_to(ROOT))
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (
                    isinstance(node, ast.keyword)
                    and node.arg == "extra"
                    and not isinstance(node.value, ast.Constant)
                ):
                    found.append((where, node.value.lineno, node.value))
    return found


def test_every_record_is_built_by_log_extra() -> None:
    calls = _log_calls()

    assert len(calls) > 50, "the scan finds the code's log records"
    assert [(where, line) for where, line, value in calls if not _calls_log_extra(value)] == []


def test_no_field_names_a_reserved_log_record_attribute() -> None:
    reserved = _reserved_names()
    fields = [
        (where, line, keyword.arg)
        for where, line, value in _log_calls()
        if isinstance(value, ast.Call)
        for keyword in value.keywords
    ]

    assert {"created", "name", "msg", "levelname", "time"} <= reserved
    assert [field for field in fields if field[2] in reserved or field[2] == "action"] == []


def test_every_action_is_logged_somewhere() -> None:
    """A name left in `LogAction` after its record went would hide a typo's twin."""
    constants = {
        node.value
        for layer in LAYERS
        for path in (ROOT / layer).rglob("*.py")
        if path.name != "log_extra.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }

    assert sorted(set(get_args(LogAction)) - constants) == []


def test_actions_are_snake_case_names() -> None:
    assert [a for a in get_args(LogAction) if not re.fullmatch(r"[a-z]+(_[a-z]+)*", a)] == []


def test_log_extra_keeps_a_field_named_like_a_record_attribute() -> None:
    extra = log_extra("apply", created=3, count=1)

    record = logging.getLogger("cronpilot.test").makeRecord(
        "n", logging.INFO, "p.py", 1, "m", None, None, extra=extra
    )

    assert extra == {"action": "apply", "field_created": 3, "count": 1}
    assert record.field_created == 3
