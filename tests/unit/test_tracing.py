"""W3C ids from cronpilot's trace ids: lowercase hex of the right length, never all zeros."""

from __future__ import annotations

import os
import re

import pytest

from cronpilot.domain.model import new_id
from cronpilot.domain.runs import tracing
from cronpilot.domain.runs.tracing import TraceContext, new_span, w3c_id

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


class _ZeroFirst:
    """A generator whose first draw is all zeros, as W3C forbids."""

    def __init__(self) -> None:
        self.draws = [0, 0xABC]

    def getrandbits(self, k: int) -> int:
        return self.draws.pop(0)


def test_a_random_id_of_all_zeros_is_drawn_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tracing, "_ids", _ZeroFirst())
    assert tracing.random_w3c_id(16) == "0000000000000abc"


@pytest.mark.parametrize("length", [16, 32])
def test_random_ids_are_lowercase_hex_of_their_length(length: int) -> None:
    made = {tracing.random_w3c_id(length) for _ in range(1000)}
    assert len(made) == 1000
    assert all(re.fullmatch(f"[0-9a-f]{{{length}}}", one) for one in made)


def test_a_forked_child_draws_other_ids_than_its_parent() -> None:
    # Without a reseed the child's generator is a copy of the parent's: the same next id.
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        os.write(write, tracing.random_w3c_id(32).encode())
        os._exit(0)
    os.close(write)
    parent_next = tracing.random_w3c_id(32)
    os.waitpid(child, 0)
    with os.fdopen(read) as pipe:
        assert pipe.read() != parent_next
