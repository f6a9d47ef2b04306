"""Input the API does not know is refused, never ignored: a misspelt field or query parameter
would otherwise become a different action (`{"untill": …}` pausing for ever,
`POST /apply?dry_run=true` writing). Bodies are `StrictBody` models; query parameters, and
whether a body may come at all, are checked against what the matched route declares, for
every route at once. A query parameter is given once, with a value (`one_value_each`), on
every API route and console page alike."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from fastapi import Request
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict

_EMPTY_AT_MOST = 64
"""Bytes read of a body sent to a route that reads none: more is no empty body."""


class StrictBody(BaseModel):
    """The base of every request body: a field it does not declare is a 422 naming it."""

    model_config = ConfigDict(extra="forbid")


def _query_names(dependant: Dependant) -> Iterator[str]:
    for field in dependant.query_params:
        model = field.field_info.annotation
        if isinstance(model, type) and issubclass(model, BaseModel):
            # A model of query parameters (`Annotated[Paging, Query()]`) declares its fields.
            yield from (info.alias or name for name, info in model.model_fields.items())
        else:
            yield field.alias
    for needed in dependant.dependencies:
        yield from _query_names(needed)


def declared_query(route: APIRoute) -> frozenset[str]:
    """The query parameters `route` takes, its dependencies' included."""
    return frozenset(_query_names(route.dependant))


def takes_body(route: APIRoute) -> bool:
    """Whether `route` reads a body: a declared model, or one it reads raw and documents
    (`/apply`)."""
    return route.body_field is not None or "requestBody" in (route.openapi_extra or {})


def one_value_each(request: Request) -> list[dict[str, Any]]:
    """The errors (as `RequestValidationError` takes them) of query parameters given more than
    once or blank. Readers disagree on those (`?job=etl&job=`: the first value, the last, the
    non-empty one, or none at all), so a filter could mean one job to one reader and every
    job to the next: they are refused, not read."""
    errors = []
    for name in sorted(set(request.query_params)):
        values = request.query_params.getlist(name)
        if len(values) > 1:
            errors.append(
                {
                    "loc": ("query", name),
                    "msg": f"given {len(values)} times: give it once",
                    "type": "value_error",
                }
            )
        elif not values[0].strip():
            errors.append(
                {
                    "loc": ("query", name),
                    "msg": "empty: leave it out, or give it a value",
                    "type": "value_error",
                }
            )
    return errors


async def known_input_only(request: Request) -> None:
    """A dependency of every API route: refuses (422, naming each) the query parameters the
    matched route does not declare or that are repeated or blank, and a body sent to a route
    that reads none. A parameter
    a route declares later is taken at once."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    declared = declared_query(route)
    takes = ", ".join(sorted(declared)) or "none"
    errors = [
        {
            "loc": ("query", name),
            "msg": f"unknown parameter (this route takes: {takes})",
            "type": "extra_forbidden",
        }
        for name in sorted(set(request.query_params) - declared)
    ]
    errors += one_value_each(request)
    if not takes_body(route) and not await _empty(request):
        errors.append(
            {"loc": ("body",), "msg": "this route takes no body", "type": "extra_forbidden"}
        )
    if errors:
        raise RequestValidationError(errors)


async def _empty(request: Request) -> bool:
    """No body, or `{}` (no field in it, as some clients send with every POST); reads no more
    than that could take."""
    read = b""
    async for chunk in request.stream():
        read += chunk
        if len(read) > _EMPTY_AT_MOST:
            return False
    return read.strip() in (b"", b"{}")
