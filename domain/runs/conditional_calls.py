"""Conditional calls (RFC 9110 §13.1): which endpoints ask with their last answer's validators.

A `GET` endpoint does, unless it says `conditional: false` or declares a validator header of
its own (then the condition is the user's, and so is the answer to it). The dispatcher keeps
the answers and turns a `304` into the answer it confirmed (`adapters.http.conditional`), so
that the run reads as an unchanged answer to everything that compares answers
(`domain.graph.change_detection`)."""

from __future__ import annotations

from cronpilot.domain.model import EndpointSpec

VALIDATOR_HEADERS = frozenset({"if-none-match", "if-modified-since"})


def calls_conditionally(spec: EndpointSpec) -> bool:
    return (
        spec.conditional
        and spec.method == "GET"
        and not any(name.lower() in VALIDATOR_HEADERS for name in spec.headers)
    )
