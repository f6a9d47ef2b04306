"""OpenTelemetry spans (CRONPILOT_OTEL) through a real worker, collected by the SDK's
in-memory exporter: claim, call and record, each a child of its run's span, in the trace the
endpoint sees in its `traceparent`."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, format_span_id, format_trace_id

from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
from cronpilot.adapters.otel_tracer import OtelTracer
from cronpilot.adapters.wake import InProcessWaker
from cronpilot.domain.graph.dependencies import with_dependants
from cronpilot.domain.model import Run, Schedule
from cronpilot.domain.ports import Store
from cronpilot.domain.runs.tracing import run_span_id
from tests.integration.scheduler.builders import RunningWorker, declare, runs_of, spec
from tests.integration.scheduler.endpoint_server import EndpointServer
from tests.support.clock import FakeClock


@dataclass(frozen=True)
class Collecting:
    tracer: OtelTracer
    exporter: InMemorySpanExporter


@pytest.fixture
def otel() -> Iterator[Collecting]:
    """A tracer whose spans the SDK keeps in memory, on a provider of its own (not global)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield Collecting(OtelTracer(provider), exporter)
    provider.shutdown()


def _of(spans: tuple[ReadableSpan, ...], run: Run) -> dict[str, ReadableSpan]:
    mine = [s for s in spans if (s.attributes or {}).get("cronpilot.run_id") == run.id]
    by_name = {s.name: s for s in mine}
    assert len(by_name) == len(mine), [s.name for s in mine]
    return by_name


async def test_claim_call_and_record_spans_are_children_of_their_run_in_its_trace(  # noqa: PLR0917
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
    otel: Collecting,
) -> None:
    await declare(
        store,
        clock.now(),
        *with_dependants(
            [
                spec(server, "ok", "root"),
                spec(server, "ok", "child", schedule=Schedule(), depends_on=("root",)),
            ]
        ),
    )

    async with RunningWorker(store, dispatcher, clock, waker, tracer=otel.tracer) as running:
        await running.until_finished(2)

    [root] = await runs_of(store, "root")
    [child] = await runs_of(store, "child")
    spans = otel.exporter.get_finished_spans()
    root_spans, child_spans = _of(spans, root), _of(spans, child)
    # The child was claimed by its parent's record, in the same transaction: no claim of its own.
    assert set(root_spans) == {"cronpilot.claim", "cronpilot.call", "cronpilot.record"}
    assert set(child_spans) == {"cronpilot.call", "cronpilot.record"}
    for run, mine in ((root, root_spans), (child, child_spans)):
        for span in mine.values():
            assert span.context is not None and span.parent is not None
            assert format_trace_id(span.context.trace_id) == root.trace_id
            assert span.parent.is_remote
            assert format_span_id(span.parent.span_id) == run_span_id(run.trace_id)
        call = mine["cronpilot.call"]
        assert call.kind is SpanKind.CLIENT
        assert (call.attributes or {})["cronpilot.status_code"] == 200
        [headers] = server.headers["root" if run is root else "child"]
        assert call.context is not None
        assert headers["traceparent"] == (
            f"00-{root.trace_id}-{format_span_id(call.context.span_id)}-01"
        )
    assert (root_spans["cronpilot.claim"].attributes or {})["cronpilot.batch"] == 1
