"""Reading a response body under a byte cap, keeping it only when it is JSON.

The body streams in and reading stops one byte past the cap, so a hostile or broken endpoint
cannot make a worker buffer more than `max_response_bytes`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from aiohttp import ClientResponse, hdrs

from cronpilot.adapters.jsonvalue import parse_storable
from cronpilot.domain.model import JSON, BodyAbsence

_BODYLESS_STATUSES = frozenset({204, 304})


@dataclass(frozen=True, slots=True)
class StoredBody:
    """The `Response` fields describing the body: either `body` or why there is none."""

    body: JSON = None
    absence: BodyAbsence | None = None
    size_bytes: int | None = None
    body_hash: str | None = None
    text: str | None = None
    """The body as text, as it was decoded (`Response.body_text`)."""


def is_json_type(content_type: str) -> bool:
    """`application/json` or any structured `+json` type such as `application/problem+json`."""
    media_type = content_type.lower()
    return media_type == "application/json" or media_type.endswith("+json")


async def read_json_body(response: ClientResponse, cap: int) -> StoredBody:
    """Read and decode the body of `response` if it is storable JSON (`parse_storable`) of at
    most `cap` bytes.

    Closes the connection when it stops early, so the rest of the body is never received."""
    declared = response.content_length
    if declared == 0 or response.status in _BODYLESS_STATUSES or response.method == "HEAD":
        return StoredBody(absence=BodyAbsence.EMPTY, size_bytes=0)
    if not is_json_type(response.content_type):
        return StoredBody(absence=BodyAbsence.NOT_JSON, size_bytes=declared)
    if declared is not None and declared > cap:
        response.close()
        return StoredBody(absence=BodyAbsence.TOO_LARGE, size_bytes=declared)

    if declared is not None and hdrs.CONTENT_ENCODING not in response.headers:
        # Within the cap and sent as is (a compressed body's length says nothing of what it
        # inflates to), and aiohttp stops at the declared length: one read.
        return _decoded(await response.read())
    chunks: list[bytes] = []
    size = 0
    while chunk := await response.content.read(cap + 1 - size):
        chunks.append(chunk)
        size += len(chunk)
        if size > cap:
            response.close()
            return StoredBody(absence=BodyAbsence.TOO_LARGE, size_bytes=size)
    return _decoded(chunks[0] if len(chunks) == 1 else b"".join(chunks))


def _decoded(raw: bytes) -> StoredBody:
    size = len(raw)
    digest = hashlib.sha256(raw).hexdigest()
    if size == 0:
        return StoredBody(absence=BodyAbsence.EMPTY, size_bytes=0, body_hash=digest)
    try:
        # Strict: a body PostgreSQL would refuse is unparsable on every backend alike.
        text = raw.decode(json.detect_encoding(raw), "surrogatepass")
        body = parse_storable(text)
    except (ValueError, RecursionError):
        return StoredBody(absence=BodyAbsence.UNPARSABLE, size_bytes=size, body_hash=digest)
    return StoredBody(body=body, size_bytes=size, body_hash=digest, text=text)
