"""The outgoing call of a claimed slot."""

from __future__ import annotations

from dataclasses import replace

from cronpilot.domain.model import Claim, HttpRequest
from cronpilot.domain.runs.conditional_calls import calls_conditionally
from cronpilot.domain.runs.templates import fill
from cronpilot.domain.runs.tracing import TRACEPARENT, TraceContext

RUN_ID_HEADER = "X-Cronpilot-Run-Id"
SLOT_HEADER = "X-Cronpilot-Slot"
"""Sent with every scheduled call so that a receiver can recognise a repeated slot (the pair is
an idempotency key) and so that tests can count calls per slot on the receiving side."""


def request_for(claim: Claim) -> HttpRequest:
    """The call of a claimed slot; a DAG run's templates are filled from its upstream responses
    (raises `TemplateUnfilled` when one cannot be)."""
    spec = claim.endpoint.spec
    url, base_headers, body = spec.url, spec.headers, spec.body
    if claim.dag is not None:
        filled = fill(spec, claim.dag.upstream)
        url, base_headers, body = filled.url, filled.headers, filled.body
    headers = {
        **base_headers,
        RUN_ID_HEADER: claim.run_id,
        SLOT_HEADER: claim.slot_at.isoformat(),
    }
    return HttpRequest(
        method=spec.method,
        url=url,
        headers=headers,
        body=body,
        timeout_seconds=spec.timeout_seconds,
        max_response_bytes=spec.max_response_bytes,
        message_id=claim.run_id,
        conditional_key=claim.endpoint.id if calls_conditionally(spec) else None,
    )


def traced(request: HttpRequest, trace: TraceContext) -> HttpRequest:
    """`request` carrying `trace` as its W3C `traceparent`, in place of any the endpoint
    declared (decision 0019): a fixed one would claim every call was the same span."""
    headers = {
        name: value for name, value in request.headers.items() if name.lower() != TRACEPARENT
    }
    headers[TRACEPARENT] = trace.traceparent
    return replace(request, headers=headers)
