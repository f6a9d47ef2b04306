"""`ETag` on endpoint representations and `If-Match` on the writes that change an endpoint."""

from __future__ import annotations

from typing import Annotated

from fastapi import Header, Response

from cronpilot.domain.model import Endpoint
from cronpilot.domain.versions import endpoint_version

IfMatch = Annotated[
    str | None,
    Header(
        alias="If-Match",
        description="The ETag read; the write is refused (412) if the endpoint changed since. "
        "Optional: without it the write applies to the endpoint as it is.",
    ),
]


def etag(version: str) -> str:
    return f'"{version}"'


def tag_response(response: Response, endpoint: Endpoint) -> None:
    response.headers["ETag"] = etag(endpoint_version(endpoint))


def expected_version(if_match: str | None) -> str | None:
    """The version an `If-Match` asks for; None for none or `*` (any version will do). A list
    of tags is taken by its first: one endpoint has one version at a time."""
    if if_match is None or if_match.strip() == "*":
        return None
    first = if_match.split(",")[0].strip().removeprefix("W/")
    return first.strip('"')
