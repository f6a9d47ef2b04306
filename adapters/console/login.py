"""Signing in with an API token, kept in an HTTP-only, SameSite=Strict cookie, and out."""

from __future__ import annotations

from http import HTTPStatus

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse

from cronpilot.adapters.api.context import Context
from cronpilot.adapters.console.pages import (
    COOKIE,
    PREFIX,
    ConsoleRoute,
    Reading,
    form_fields,
    render,
)

router = APIRouter(prefix=PREFIX, route_class=ConsoleRoute, include_in_schema=False)

SESSION_SECONDS = 12 * 3600
"""How long the browser keeps the cookie: a working day, then the token is asked again."""


def _landing(wanted: str | None) -> str:
    """Where to go once signed in: a console page asked for, never another site."""
    if wanted and wanted.startswith(f"{PREFIX}/") and not wanted.startswith("//"):
        return wanted
    return f"{PREFIX}/endpoints"


@router.get("")
@router.get("/")
async def home() -> RedirectResponse:
    return RedirectResponse(f"{PREFIX}/endpoints", HTTPStatus.SEE_OTHER)


@router.get("/login")
async def login_form(request: Request, ctx: Context, next: str | None = None) -> Response:
    return render(request, "login.html", None, ctx.clock.now(), wanted=_landing(next))


@router.post("/login")
async def login(request: Request, ctx: Context) -> Response:
    fields = await form_fields(request)
    secret = fields.get("token", "").strip()
    wanted = _landing(fields.get("next"))
    principal = await ctx.authenticate(secret) if secret else None
    if principal is None:
        return render(
            request,
            "login.html",
            None,
            ctx.clock.now(),
            code=HTTPStatus.UNAUTHORIZED,
            wanted=wanted,
            failed="That token is unknown or revoked: create one with `cronpilot tokens create`.",
        )
    response = RedirectResponse(wanted, HTTPStatus.SEE_OTHER)
    response.set_cookie(
        COOKIE,
        secret,
        max_age=SESSION_SECONDS,
        path=PREFIX,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


@router.post("/logout")
async def logout(_: Reading) -> Response:
    response = RedirectResponse(f"{PREFIX}/login", HTTPStatus.SEE_OTHER)
    response.delete_cookie(COOKIE, path=PREFIX, httponly=True, samesite="strict")
    return response
