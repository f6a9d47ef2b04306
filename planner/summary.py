"""A run summed up in one short line of the brief: its outcome, and the top-level fields of its
body with short values as they are, long ones cut and containers by their size. The model
decides on most analyses from this line and reads fields through the tools only when it needs
more ("pay only for what is read")."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from cronpilot.domain.model import Endpoint, Run
from cronpilot.domain.planning.context import related_siblings
from cronpilot.domain.planning.planning import AnalysisContext
from cronpilot.domain.search.search import (
    SearchIndex,
    estimated_tokens,
    indexed_text,
    sibling_texts,
)

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


def relevant_siblings(
    endpoint: Endpoint, context: AnalysisContext, now: datetime
) -> list[Endpoint]:
    """The job's other endpoints by relevance to `endpoint`: those linked to it in the graph
    first (its upstreams and dependants decide most schedules), then by hybrid relevance (seed
    003: its own text as the query, lexical and graph legs with it in context); those the
    search scores 0 last, in graph order (`related_siblings`)."""
    others = related_siblings(endpoint, context.endpoints, context.edges, now)
    index = SearchIndex(sibling_texts(context.endpoints), context.edges)
    query = indexed_text(endpoint).text
    hits = index.search(query, None, limit=len(context.endpoints), context=[endpoint.ref]).hits
    score = {h.ref: h.score for h in hits}
    linked = {
        n
        for e in context.edges
        for n in (e.from_node, e.to_node)
        if endpoint.ref in (e.from_node, e.to_node)
    }
    linked |= {f"{endpoint.job_name}/{up}" for up in endpoint.spec.depends_on}
    linked |= {e.ref for e in others if endpoint.spec.name in e.spec.depends_on}
    position = {e.ref: i for i, e in enumerate(others)}
    return sorted(
        others,
        key=lambda e: (
            e.ref not in linked,
            e.ref not in score,
            -score.get(e.ref, 0.0),
            position[e.ref],
        ),
    )


def summed_up(
    endpoint: Endpoint, context: AnalysisContext, now: datetime, budget_tokens: int
) -> dict[str, Run | None]:
    """The newest run of `endpoint`, then of its most relevant siblings while their summary
    lines fit in `budget_tokens` (at most `MAX_SIBLINGS`), by name: what the brief sums up.
    The model reads the others through `get_sibling_latest_responses` or finds them with
    `find_endpoints`."""
    chosen = {endpoint.name: context.latest.get(endpoint.id)}
    spent = 0
    for sibling in relevant_siblings(endpoint, context, now)[:MAX_SIBLINGS]:
        run = context.latest.get(sibling.id)
        cost = estimated_tokens(f"- {sibling.name}: {run_summary(run)}\n")
        if spent + cost > budget_tokens:
            break
        chosen[sibling.name] = run
        spent += cost
    return chosen
