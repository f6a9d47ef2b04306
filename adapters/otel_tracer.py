"""`OtelTracer`: the worker's spans as OpenTelemetry spans (the extra `otel`, turned on with
CRONPILOT_OTEL=true; decision 0019).

Spans go to the process's tracer provider, configured as OpenTelemetry's own tools do
(`opentelemetry-instrument`, an exporter and its `OTEL_*` variables); cronpilot only makes the
spans. Each is a child of its run's span (`domain.runs.tracing.run_trace`), a remote parent: so
every span carries the run's trace id, the one the endpoint sees in its `traceparent`.
Only this module imports opentelemetry, and only `adapters.bootstrap` imports it, when asked.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from importlib.metadata import version

from opentelemetry import trace
from opentelemetry.context import Context

from cronpilot.domain.ports import Span, SpanValue, Tracer
from cronpilot.domain.runs.tracing import SpanName, TraceContext, new_span

_KINDS: dict[SpanName, trace.SpanKind] = {
    "claim": trace.SpanKind.INTERNAL,
    "call": trace.SpanKind.CLIENT,
    "record": trace.SpanKind.INTERNAL,
}
_PREFIX = "cronpilot."


class _OtelSpan(Span):
    __slots__ = ("_context", "_span")

    def __init__(self, span: trace.Span, run: TraceContext) -> None:
        self._span = span
        own = span.get_span_context()
        # Without a configured SDK the API's tracer hands back the (remote) parent itself: the
        # call still needs a span id of its own.
        self._context = (
            new_span(run)
            if own.is_remote or not own.is_valid
            else TraceContext(
                trace.format_trace_id(own.trace_id), trace.format_span_id(own.span_id)
            )
        )

    @property
    def context(self) -> TraceContext:
        return self._context

    def note(self, **attributes: SpanValue) -> None:
        self._span.set_attributes(_named(attributes))


class OtelTracer(Tracer):
    def __init__(self, provider: trace.TracerProvider | None = None) -> None:
        """Spans from `provider`, the global one by default."""
        self._tracer = trace.get_tracer("cronpilot", version("cronpilot"), provider)

    @contextmanager
    def span(self, name: SpanName, run: TraceContext, **attributes: SpanValue) -> Iterator[Span]:
        with self._tracer.start_as_current_span(
            _PREFIX + name,
            context=_run_context(run),
            kind=_KINDS[name],
            attributes=_named(attributes),
        ) as span:
            yield _OtelSpan(span, run)

    def past_span(
        self,
        name: SpanName,
        run: TraceContext,
        start: datetime,
        end: datetime,
        **attributes: SpanValue,
    ) -> None:
        span = self._tracer.start_span(
            _PREFIX + name,
            context=_run_context(run),
            kind=_KINDS[name],
            attributes=_named(attributes),
            start_time=_nanoseconds(start),
        )
        span.end(end_time=_nanoseconds(end))


def _run_context(run: TraceContext) -> Context:
    """A context whose current span is the run's, remote: what its spans are children of."""
    parent = trace.SpanContext(
        trace_id=int(run.trace_id, 16),
        span_id=int(run.span_id, 16),
        is_remote=True,
        trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED),
    )
    return trace.set_span_in_context(trace.NonRecordingSpan(parent))


def _named(attributes: dict[str, SpanValue]) -> dict[str, SpanValue]:
    return {_PREFIX + name: value for name, value in attributes.items()}


def _nanoseconds(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000_000)
