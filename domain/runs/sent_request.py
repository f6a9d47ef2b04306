"""The request a run sent, as it is kept on the run and shown (`runs show`, the API): the call
after its templates were filled, with every secret masked and every part bounded, so that a
stored run never holds a credential and a large body never swells the runs table."""

from __future__ import annotations

import json

from cronpilot.domain.access.secrets import mask_headers, mask_url
from cronpilot.domain.model import JSON, HttpRequest, SentRequest
from cronpilot.domain.runs.excerpt import excerpt

MAX_URL_CHARS = 2_000
MAX_HEADER_CHARS = 500
MAX_BODY_CHARS = 4_000
"""Enough to recognise a call by; the rest is cut, its length said."""


def json_text(body: JSON) -> str:
    """A request body as it goes on the wire: compact JSON."""
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)


def sent_request(request: HttpRequest) -> SentRequest:
    """`request` fit to keep: the URL's credentials and secret-looking header values masked
    (`domain.access.secrets`), then the URL, each header value and the body cut to their bounds."""
    headers = {
        name: excerpt(value, MAX_HEADER_CHARS)
        for name, value in mask_headers(request.headers).items()
    }
    return SentRequest(
        method=request.method.upper(),
        url=excerpt(mask_url(request.url), MAX_URL_CHARS),
        headers=headers,
        body=None if request.body is None else excerpt(json_text(request.body), MAX_BODY_CHARS),
    )
