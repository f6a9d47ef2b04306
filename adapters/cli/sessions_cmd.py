"""`cronpilot sessions …`: what each planner analysis read, proposed and concluded."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated

import typer

from cronpilot.adapters.cli.listing import (
    EndpointFilter,
    LimitOption,
    Listing,
    Referenced,
    with_endpoint_refs,
)
from cronpilot.adapters.cli.output import (
    OutputOption,
    add_row,
    details_table,
    new_table,
    print_data,
    print_rich,
    print_table,
)
from cronpilot.adapters.cli.runtime import admin_settings, with_store
from cronpilot.adapters.cli.time_options import SinceOption, UntilOption, window
from cronpilot.adapters.views.formats import clock_time, short_id
from cronpilot.adapters.views.planner import session_view
from cronpilot.domain.planning.planning import AnalysisSession, ToolCallRecord
from cronpilot.domain.ports import Store
from cronpilot.domain.rules.rule_firing import value_text
from cronpilot.usecases.queries import catalog, planner


def list_sessions(
    endpoint: EndpointFilter = None,
    limit: LimitOption = 20,
    *,
    since: SinceOption = None,
    until: UntilOption = None,
    output: OutputOption = None,
) -> None:
    """Analysis sessions, newest first."""
    within = window(since, until)
    found = with_endpoint_refs(
        lambda reading: planner.list_sessions(reading, endpoint, limit, within=within)
    )
    _LISTING.show(found, output)


def _row(entry: Referenced[AnalysisSession], now: datetime) -> list[str]:
    s, ref = entry
    return [
        short_id(s.id),
        ref,
        clock_time(s.started_at, now),
        s.planner,
        s.status.value,
        f"{len(s.tool_calls)} ({s.tool_errors} errors)",
        f"{s.prompt_tokens}+{s.completion_tokens}",
        s.error or s.reasoning,
    ]


_LISTING = Listing[Referenced[AnalysisSession]](
    empty="no analysis sessions",
    columns=("Session", "Endpoint", "When", "Planner", "Status", "Calls", "Tokens", "Why"),
    row=_row,
    view=lambda entry: session_view(*entry),
    wrap=("Why",),
)


def show(
    session_id: Annotated[str, typer.Argument(help="A session id from `sessions list`.")],
    output: OutputOption = None,
) -> None:
    """One session: its tool calls in order (arguments, duration, result size, and what each
    did: a proposal held, applied or refused by a guardrail, or an error), tokens and
    reasoning; for a rules session, each rule evaluated (its value, and the proposal made or
    why none was)."""

    async def act(store: Store) -> tuple[AnalysisSession, str]:
        found = await planner.show_session(store.reading, session_id)
        return found, await catalog.ref_of(store.reading, found)

    session, ref = with_store(admin_settings(), act)
    view = session_view(session, ref)
    if output:
        print_data(output, view)
        return
    print_rich(
        details_table(
            [
                ("session", session.id),
                ("endpoint", view["endpoint"]),
                ("planner", session.planner),
                ("status", session.status.value + (f": {session.error}" if session.error else "")),
                ("started", view["started_at"]),
                ("finished", view["finished_at"]),
                (
                    "tokens",
                    f"{session.prompt_tokens} prompt, {session.completion_tokens} completion",
                ),
                ("confidence", "-" if session.confidence is None else f"{session.confidence:g}"),
                ("look again", view["next_analysis_at"] or "-"),
                ("reasoning", session.reasoning or "-"),
            ]
        )
    )
    if session.rule_evaluations:
        rules = new_table("Rule", "When", "Value", "Outcome", "Did", wrap=("When", "Did"))
        for evaluation in session.rule_evaluations:
            add_row(
                rules,
                str(evaluation.number),
                evaluation.when,
                "-" if evaluation.value is None else value_text(evaluation.value),
                evaluation.outcome.value,
                evaluation.detail,
            )
        print_table(rules)
        return
    table = new_table("#", "Tool", "Arguments", "Took", "Did", wrap=("Arguments", "Did"))
    for call in session.tool_calls:
        add_row(
            table,
            str(call.seq),
            call.name,
            json.dumps(call.arguments, ensure_ascii=False),
            f"{call.duration_ms:.1f}ms",
            _did(call),
        )
    print_table(table)


def _did(call: ToolCallRecord) -> str:
    """What a call did: its error; for an action the fate of its proposal; for a read, how
    much the model got back."""
    if call.error is not None:
        return f"error: {call.error}"
    return call.outcome or f"answered {call.result_chars} chars"
