"""The tracer of a worker that reports no spans: every call still gets a span id of its own for
its `traceparent`, and nothing is recorded. It sits on the hot path of every run, so a span is
a plain context manager whose span id is drawn only when something reads it."""

from __future__ import annotations

from datetime import datetime
from types import TracebackType

from cronpilot.domain.ports.tracing import Span, SpanValue, Tracer
from cronpilot.domain.runs.tracing import SpanName, TraceContext, new_span


class _Unrecorded(Span):
    __slots__ = ("_context", "_run")

    def __init__(self, run: TraceContext) -> None:
        self._run = run
        self._context: TraceContext | None = None

    @property
    def context(self) -> TraceContext:
        if self._context is None:
            self._context = new_span(self._run)
        return self._context

    def note(self, **attributes: SpanValue) -> None:
        return None

    def __enter__(self) -> Span:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        return None


class NoTracer(Tracer):
    def span(self, name: SpanName, run: TraceContext, **attributes: SpanValue) -> _Unrecorded:
        return _Unrecorded(run)

    def past_span(
        self,
        name: SpanName,
        run: TraceContext,
        start: datetime,
        end: datetime,
        **attributes: SpanValue,
    ) -> None:
        return None
