"""The outgoing call of a claimed slot."""

from __future__ import annotations

from domain.model import Claim, HttpRequest

RUN_ID_HEADER = "X-Cronpilot-Run-Id"
SLOT_HEADER = "X-Cronpilot-Slot"
"""Sent with every scheduled call so that a receiver can recognise a repeated slot (the pair is
an idempotency key) and so that tests can count calls per slot on the receiving side."""


def request_for(claim: Claim) -> HttpRequest:
    spec = claim.endpoint.spec
    headers = {
        **spec.headers,
        RUN_ID_HEADER: claim.run_id,
        SLOT_HEADER: claim.slot_at.isoformat(),
    }
    return HttpRequest(
        method=spec.method,
        url=spec.url,
        headers=headers,
        body=spec.body,
        timeout_seconds=spec.timeout_seconds,
        max_response_bytes=spec.max_response_bytes,
    )
