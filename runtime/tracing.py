"""The tracer of a worker that reports no spans: every call still gets a span id of its own for
its `traceparent`, and nothing is recorded."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

from cronpilot.domain.ports import Span, SpanValue, Tracer
from cronpilot.domain.tracing import SpanName, TraceContext, new_span


class _Unrecorded(Span):
    __slots__ = ("_context",)

    def __init__(self, context: TraceContext) -> None:
        self._context = context

    @property
    def context(self) -> TraceContext:
        return self._context

    def note(self, **attributes: SpanValue) -> None:
        return None


class NoTracer(Tracer):
    @contextmanager
    def span(self, name: SpanName, run: TraceContext, **attributes: SpanValue) -> Iterator[Span]:
        yield _Unrecorded(new_span(run))

    def past_span(
        self,
        name: SpanName,
        run: TraceContext,
        start: datetime,
        end: datetime,
        **attributes: SpanValue,
    ) -> None:
        return None
