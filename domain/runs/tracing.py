"""Trace context: the W3C `traceparent` every endpoint call carries, and the spans a worker may
report (`ports.Tracer`), all in the trace of the run they serve.

A run's W3C trace id is its own `trace_id`, or, for a DAG run's dependant, the trace id of the
run that began the DAG run (`DagTrigger.dag_run_id`): every call of one DAG run, parents and
children, is one trace. Each call (each attempt of a slot) is a span of its own, a new span id.
"""

from __future__ import annotations

import hashlib
import os
import random
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from cronpilot.domain.model import Claim, Run

TRACEPARENT = "traceparent"
"""The W3C header (https://www.w3.org/TR/trace-context/): `00-<trace id>-<span id>-01`."""
TRACE_ID_HEX = 32
SPAN_ID_HEX = 16
_LOWER_HEX = frozenset("0123456789abcdef")

# W3C ids must be unpredictable enough not to collide, not secret (trace context, section
# "Considerations for trace-id field generation"): a Mersenne Twister seeded from os.urandom
# makes a span id in 2-4 µs where `secrets` and checking took 8-10 (decision 0051). Reseeded in a
# forked child, which would otherwise repeat its parent's ids.
_ids = random.Random()
os.register_at_fork(after_in_child=_ids.seed)

SpanName = Literal["claim", "call", "record"]
"""What a worker's spans report, named `cronpilot.<name>`: the claim of a slot, each call made
for it, and the recording of its run."""


@dataclass(frozen=True, slots=True)
class TraceContext:
    """A position in a trace: W3C ids in lowercase hex, never all zeros."""

    trace_id: str
    span_id: str

    @property
    def traceparent(self) -> str:
        # Version 00; flags 01 (sampled): the endpoint's own tracing may keep its side.
        return f"00-{self.trace_id}-{self.span_id}-01"


def random_w3c_id(length: int) -> str:
    """A random W3C id of `length` hex digits, lowercase, never all zeros."""
    bits = 0
    while not bits:
        bits = _ids.getrandbits(length * 4)
    return "%0*x" % (length, bits)  # noqa: UP031 -- twice as fast as a nested f-string


def w3c_id(text: str, length: int) -> str:
    """`text` as a W3C id of `length` hex digits: as it is when it already is one (cronpilot's
    ids are uuid4 hex, lowercase), else digested from it; never all zeros, which W3C reserves
    for "no id"."""
    candidate = text.lower()
    if len(candidate) != length or not _LOWER_HEX.issuperset(candidate):
        candidate = hashlib.sha256(text.encode()).hexdigest()[:length]
    if set(candidate) == {"0"}:
        candidate = candidate[:-1] + "1"
    return candidate


def run_trace(claim: Claim) -> TraceContext:
    """The trace of `claim`'s run: its W3C trace id (its DAG run's, for a dependant) and the
    run's own span id, derived from its trace id, which its spans name as their parent."""
    return _run_trace(claim.trace_id, claim.trace_id if claim.dag is None else claim.dag.dag_run_id)


def trace_id_of(run: Run) -> str:
    """The W3C trace id `run`'s calls carried in their `traceparent` (`run_trace`), as a
    called service saw it: its DAG run's for a dependant, its own otherwise."""
    return _run_trace(run.trace_id, run.dag_run_id or run.trace_id).trace_id


@lru_cache(maxsize=4096)
def _run_trace(run_trace_id: str, trace_id: str) -> TraceContext:
    # A worker asks for a run's trace for its claim, its call and its record spans: digest once.
    return TraceContext(w3c_id(trace_id, TRACE_ID_HEX), run_span_id(run_trace_id))


def run_span_id(trace_id: str) -> str:
    """The span id of the run whose (cronpilot) trace id is `trace_id`: derived, so that any
    worker names the same parent for the run's spans."""
    return w3c_id(hashlib.sha256(trace_id.encode()).hexdigest()[:SPAN_ID_HEX], SPAN_ID_HEX)


def new_span(run: TraceContext) -> TraceContext:
    """A new span of `run`'s trace, its span id random."""
    return TraceContext(run.trace_id, random_w3c_id(SPAN_ID_HEX))
