"""`cronpilot schema …`: what each endpoint answers, as learnt from its stored responses."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.json import JSON as RichJSON

from cronpilot.adapters.bootstrap import build_clock
from cronpilot.adapters.cli.output import EndpointRef, OutputOption, note, print_data, print_rich
from cronpilot.adapters.cli.runtime import admin_settings, with_store
from cronpilot.adapters.views.formats import iso
from cronpilot.adapters.views.outputs import output_view
from cronpilot.domain.graph.outputs import OutputSchema
from cronpilot.domain.model import Endpoint
from cronpilot.domain.ports import Store
from cronpilot.usecases.graph_edges import refresh_job_provides
from cronpilot.usecases.queries.catalog import list_endpoints, show_endpoint
from cronpilot.usecases.queries.outputs import show_output
from cronpilot.usecases.schema_learning import rebuild_schema


def show(
    ref: EndpointRef,
    drift: Annotated[int, typer.Option(min=0, max=1000, help="Drift events to list.")] = 10,
    output: OutputOption = None,
) -> None:
    """An endpoint's output schema (JSON Schema with counts and confidence) and its drift."""

    found = with_store(admin_settings(), lambda store: show_output(store.reading, ref, drift))
    endpoint, schema, events = found.endpoint, found.schema, found.drift
    if output:
        print_data(output, output_view(found))
        return
    if schema is None or not schema.observations:
        note(f"no output schema yet for {endpoint.ref}: it has stored no JSON body so far")
        return
    print_rich(
        f"{endpoint.ref}: learnt from {schema.observations} responses",
        RichJSON.from_data(found.json_schema()),
    )
    for what, paths in (
        ("volatile (learnt)", endpoint.volatile_fields),
        ("change_ignores", endpoint.spec.change_ignores),
    ):
        if paths:
            print_rich(f"not compared for a change, {what}: {', '.join(paths)}")
    for event in events:
        print_rich(f"drift {iso(event.at)} run {event.run_id}: {'; '.join(event.changes)}")


def backfill(
    ref: Annotated[
        str | None, typer.Argument(help="`job/endpoint`; every endpoint when left out.")
    ] = None,
    output: OutputOption = None,
) -> None:
    """Rebuild output schemas and drift history from the runs stored now."""

    async def act(store: Store) -> list[tuple[Endpoint, OutputSchema, int]]:
        states = (
            [await show_endpoint(store.reading, ref)]
            if ref is not None
            else await list_endpoints(store.reading)
        )
        endpoints = [state.endpoint for state in states]
        clock = build_clock()
        rebuilt = []
        for endpoint in endpoints:
            schema = await rebuild_schema(store.unit_of_work, store.reading, endpoint, clock.now())
            learnt = await show_output(store.reading, endpoint.id, drift_limit=1000)
            rebuilt.append((endpoint, schema, len(learnt.drift)))
        # Once per job, after all of its schemas are rebuilt.
        for job in sorted({endpoint.job_name for endpoint in endpoints}):
            await refresh_job_provides(store.unit_of_work, job, clock.now())
        return rebuilt

    rebuilt = with_store(admin_settings(), act)
    if output:
        print_data(
            output,
            [
                {"endpoint": e.ref, "observations": s.observations, "drift_events": n}
                for e, s, n in rebuilt
            ],
        )
        return
    for endpoint, schema, drift in rebuilt:
        typer.echo(f"rebuilt {endpoint.ref}: {schema.observations} responses, {drift} drift events")
