"""Spans of a run's trace (decision 0019)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from cronpilot.domain.runs.tracing import SpanName, TraceContext


SpanValue = str | int | float | bool


class Span(Protocol):
    """A span under way (`Tracer.span`)."""

    @property
    def context(self) -> TraceContext:
        """Its place in the trace: what the `traceparent` of a call made in it carries."""
        ...

    def note(self, **attributes: SpanValue) -> None:
        """Add attributes learnt while the span runs (a call's status code)."""
        ...


class Tracer(Protocol):
    """Where a worker's spans go (decision 0019): nowhere by default, OpenTelemetry when it is
    turned on. Spans are named `cronpilot.<name>` and belong to the trace of the run they
    serve, children of the run's span (`domain.runs.tracing.run_trace`)."""

    def span(
        self, name: SpanName, run: TraceContext, **attributes: SpanValue
    ) -> AbstractContextManager[Span]:
        """A span of `run`'s trace for the duration of the block; its context is new (a new
        span id, random when nothing records it)."""
        ...

    def past_span(
        self,
        name: SpanName,
        run: TraceContext,
        start: datetime,
        end: datetime,
        **attributes: SpanValue,
    ) -> None:
        """A span of `run`'s trace that has already happened: a claim, which learns the runs
        it serves only when it ends."""
        ...
