"""W3C ids from cronpilot's trace ids: lowercase hex of the right length, never all zeros."""

from __future__ import annotations

import re

import pytest

from cronpilot.domain.model import new_id
from cronpilot.domain.tracing import TraceContext, new_span, w3c_id

HEX32 = re.compile(r"[0-9a-f]{32}")


def test_a_cronpilot_trace_id_is_its_own_w3c_trace_id() -> None:
    trace_id = new_id()
    assert w3c_id(trace_id, 32) == trace_id
    assert w3c_id(trace_id.upper(), 32) == trace_id


@pytest.mark.parametrize(
    "odd", ["", "run-42", "0af7651916cd43dd8448eb211c80319c0", "zz" * 16, "0" * 32, "é" * 32]
)
def test_anything_else_becomes_a_stable_non_zero_id(odd: str) -> None:
    made = w3c_id(odd, 32)
    assert HEX32.fullmatch(made)
    assert made != "0" * 32
    assert made == w3c_id(odd, 32)


def test_span_ids_are_new_hex_and_the_traceparent_is_version_00_sampled() -> None:
    run = TraceContext(new_id(), w3c_id("run", 16))
    spans = {new_span(run) for _ in range(100)}
    assert len({span.span_id for span in spans}) == 100
    [trace_id] = {span.traceparent.split("-")[1] for span in spans}
    assert trace_id == run.trace_id
    for span in spans:
        assert re.fullmatch(r"00-[0-9a-f]{32}-[0-9a-f]{16}-01", span.traceparent)
