"""Input the API does not know is refused, never ignored: a misspelt field or query parameter
would otherwise become a different action (`{"untill": …}` pausing for ever,
`POST /apply?dry_run=true` writing). Bodies are `StrictBody` models; query parameters are
checked against what the matched route declares, for every route at once."""

from __future__ import annotations

from collections.abc import Iterator

from fastapi import Request
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict


class StrictBody(BaseModel):
    """The base of every request body: a field it does not declare is a 422 naming it."""

    model_config = ConfigDict(extra="forbid")


def _query_names(dependant: Dependant) -> Iterator[str]:
    yield from (field.alias for field in dependant.query_params)
    for needed in dependant.dependencies:
        yield from _query_names(needed)


def declared_query(route: APIRoute) -> frozenset[str]:
    """The query parameters `route` takes, its dependencies' included."""
    return frozenset(_query_names(route.dependant))


async def known_query_only(request: Request) -> None:
    """A dependency of every API route: refuses (422, naming each) the query parameters the
    matched route does not declare. A parameter a route declares later is taken at once."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    declared = declared_query(route)
    unknown = sorted(set(request.query_params) - declared)
    if not unknown:
        return
    takes = ", ".join(sorted(declared)) or "none"
    raise RequestValidationError(
        [
            {
                "loc": ("query", name),
                "msg": f"unknown parameter (this route takes: {takes})",
                "type": "extra_forbidden",
            }
            for name in unknown
        ]
    )
