"""Input the API does not know is refused with a 422 naming it, on every route: a typo must not
become a different action."""

from __future__ import annotations

import re
from typing import Annotated

import httpx
from fastapi import Depends, FastAPI, Query
from pydantic import BaseModel

from cronpilot.adapters.web.strict import known_input_only
from cronpilot.domain.access.access import Scope
from tests.integration.api.conftest import JOBS, Api
from tests.integration.api.test_api import _is_problem


async def test_every_route_refuses_a_query_parameter_it_does_not_declare(api: Api) -> None:
    async with api.client(None) as client:
        document = (await client.get("/openapi.json")).json()
        operations = [
            (method, re.sub(r"\{[^}]+\}", "x", path))
            for path, item in document["paths"].items()
            for method in item
        ]
        assert len(operations) > 20
        for method, path in [*operations, ("get", "/healthz")]:
            response = await client.request(method, path, params={"zzz": "1"})
            refused = _is_problem(response, 422)
            assert str(refused["detail"]).startswith("query.zzz: unknown parameter"), (
                method,
                path,
            )


async def test_a_misspelt_query_parameter_changes_nothing(api: Api) -> None:
    async with api.client() as client:
        refused = _is_problem(await client.post("/apply?dyr_run=true", content=JOBS), 422)
        assert refused["detail"] == "query.dyr_run: unknown parameter (this route takes: dry_run)"
        assert (await client.get("/jobs")).json()["items"] == []
        _is_problem(await client.get("/runs", params={"endpiont": "shop/stock"}), 422)
        both = _is_problem(await client.get("/runs", params={"b": "1", "a": "2"}), 422)
        assert [e["where"] for e in both["errors"]] == ["query.a", "query.b"]  # type: ignore[union-attr]
        assert "endpoint" in str(both["detail"])


async def test_a_parameter_not_supported_yet_never_acts_as_if_absent(api: Api) -> None:
    # Refused while a route lacks it, honoured once it declares it: never silently ignored.
    async with api.client() as client:
        dry = await client.post("/apply", params={"dry_run": "true"}, content=JOBS)
        assert dry.status_code in (200, 422), dry.text
        assert (await client.get("/jobs")).json()["items"] == []
        await client.post("/apply", content=JOBS)
        listed = await client.get("/endpoints", params={"limit": 1})
        assert listed.status_code == 422 or len(listed.json()["items"]) == 1, listed.text


async def test_a_misspelt_body_field_is_refused_and_nothing_is_paused(api: Api) -> None:
    async with api.client(Scope.ADMIN) as client:
        await client.post("/apply", content=JOBS)
        body = {"reason": "upkeep", "untill": "2030-01-01T00:00:00Z"}
        refused = _is_problem(await client.post("/endpoints/shop/stock/pause", json=body), 422)
        assert str(refused["detail"]).startswith("body.untill: Extra inputs are not permitted")
        assert (await client.get("/endpoints/shop/stock")).json()["paused"] is None
        backfill = {"start": "2030-01-01T00:00:00Z", "end": "2030-01-01T00:00:00Z", "max": 1}
        _is_problem(await client.post("/endpoints/shop/stock/backfill", json=backfill), 422)
        _is_problem(await client.post("/proposals/x/reject", json={"reason": "no", "a": 1}), 422)
        _is_problem(await client.post("/approvals/x/approve", json={"reasn": "ok"}), 422)
        # A body where none is read is refused too: `run` takes no `at`.
        refused = _is_problem(
            await client.post("/endpoints/shop/stock/run", json={"at": "2030-01-01T00:00:00Z"}),
            422,
        )
        assert refused["detail"] == "body: this route takes no body"
        assert (await client.post("/endpoints/shop/stock/resume", json={})).status_code == 200
        assert (await client.get("/runs")).json()["items"] == []


class Window(BaseModel):
    since: str | None = None
    until: str | None = None


async def test_a_parameter_a_route_declares_is_taken_without_more_code() -> None:
    app = FastAPI(dependencies=[Depends(known_input_only)])

    @app.get("/items")
    async def items(limit: int = 10) -> dict[str, int]:
        return {"limit": limit}

    @app.get("/windowed")
    async def windowed(window: Annotated[Window, Query()]) -> dict[str, str | None]:
        return {"since": window.since}

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        assert (await client.get("/items", params={"limit": 2})).json() == {"limit": 2}
        assert (await client.get("/items", params={"limt": 2})).status_code == 422
        taken = await client.get("/windowed", params={"since": "a", "until": "b"})
        assert taken.json() == {"since": "a"}
        assert (await client.get("/windowed", params={"window": "a"})).status_code == 422


async def test_a_pause_beyond_ten_years_or_the_calendar_is_a_400_line(api: Api) -> None:
    async with api.client() as client:
        await client.post("/apply", content=JOBS)
        for until in ("9999-12-31T23:59:59+14:00", "2100-01-01T00:00:00Z"):
            body = {"reason": "long", "until": until}
            refused = _is_problem(await client.post("/endpoints/shop/stock/pause", json=body), 400)
            assert refused["detail"] == "until: is more than ten years ahead"
        assert (await client.get("/endpoints/shop/stock")).json()["paused"] is None
