"""A run summed up in one short line of the brief: its outcome, and the top-level fields of its
body with short values as they are, long ones cut and containers by their size. The model
decides on most analyses from this line and reads fields through the tools only when it needs
more ("pay only for what is read")."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from cronpilot.domain.context import related_siblings
from cronpilot.domain.model import Endpoint, Run
from cronpilot.domain.planning import AnalysisContext

MAX_VALUE_CHARS = 24
MAX_LINE_CHARS = 240
MAX_SIBLINGS = 8


def _value(value: Any) -> str:
    if isinstance(value, list):
        return f"[{len(value)} items]"
    if isinstance(value, dict):
        return f"{{{len(value)} fields}}"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= MAX_VALUE_CHARS else f"{text[: MAX_VALUE_CHARS - 1]}…"


def body_summary(body: Any) -> str:
    """`fraud_rate=0.031, sale_phase="peak", items=[3 items]`: scalars JSON-encoded (a value
    cut short ends with `…`), at most `MAX_LINE_CHARS`."""
    if not isinstance(body, dict):
        return "body " + _value(body)
    text = ", ".join(f"{name}={_value(value)}" for name, value in body.items())
    return text if len(text) <= MAX_LINE_CHARS else f"{text[:MAX_LINE_CHARS]}…"


def run_summary(run: Run | None) -> str:
    if run is None:
        return "no run yet"
    code = "" if run.status_code is None else f" {run.status_code}"
    outcome = f"{run.slot_at:%H:%M:%S} {run.status.value}{code}"
    if run.body_absence is not None:
        return f"{outcome}; no body ({run.body_absence.value})"
    return f"{outcome}; {body_summary(run.body)}"


def summed_up(endpoint: Endpoint, context: AnalysisContext, now: datetime) -> dict[str, Run | None]:
    """The newest run of `endpoint` and of its `MAX_SIBLINGS` most related siblings, by name:
    what the brief sums up."""
    closest = related_siblings(endpoint, context.endpoints, context.edges, now)[:MAX_SIBLINGS]
    return {e.name: context.latest.get(e.id) for e in [endpoint, *closest]}
