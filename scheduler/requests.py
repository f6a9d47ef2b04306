"""The outgoing call of a claimed slot, and the request it sent as it is kept on the run."""

from __future__ import annotations

from cronpilot.domain.evolve import evolved
from cronpilot.domain.model import Claim, HttpRequest, SentRequest
from cronpilot.domain.runs.conditional_calls import calls_conditionally
from cronpilot.domain.runs.sent_request import sent_request
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
    return evolved(request, headers=headers)


class SentRequests:
    """The requests calls sent, fit to keep (`domain.runs.sent_request`), the masking of each
    endpoint's declared URL and headers done once per declaration rather than on every call:
    a worker calls the same few thousand endpoints over and over, and masking costs more than
    comparing a declaration with the one masked. A call with a body, or with templates filled
    from a DAG run's upstream answers, is masked whole each time. Holds up to `size`
    endpoints, then starts afresh."""

    def __init__(self, size: int = 20_000) -> None:
        self._size = size
        self._masked: dict[str, tuple[str, str, dict[str, str], SentRequest]] = {}
        """By endpoint id: the URL, method and headers declared, and their request masked."""

    def of(self, claim: Claim, request: HttpRequest) -> SentRequest:
        """`sent_request(request)` for `request`, the call `request_for(claim)` made."""
        spec = claim.endpoint.spec
        if claim.dag is not None or spec.body is not None:
            return sent_request(request)
        kept = self._masked.get(claim.endpoint.id)
        if kept is None or kept[:3] != (spec.url, spec.method, spec.headers):
            if len(self._masked) >= self._size:
                self._masked.clear()
            declared = HttpRequest(
                spec.method,
                spec.url,
                spec.headers,
                None,
                spec.timeout_seconds,
                spec.max_response_bytes,
            )
            kept = (spec.url, spec.method, spec.headers, sent_request(declared))
            self._masked[claim.endpoint.id] = kept
        masked = kept[3]
        # The run's own headers: an id and a time, neither secret nor long.
        headers = {
            **masked.headers,
            RUN_ID_HEADER: request.headers[RUN_ID_HEADER],
            SLOT_HEADER: request.headers[SLOT_HEADER],
        }
        return SentRequest(masked.method, masked.url, headers, masked.body)
