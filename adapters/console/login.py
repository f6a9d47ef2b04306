"""Signing in with an API token, and out. The token is checked once, at sign-in; the cookie
(HTTP-only, SameSite=Strict) holds the random id of a server-side session, stored hashed, that
signing out deletes: a copied cookie then opens nothing."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated
from urllib.parse import urlsplit

from fastapi import Depends, Request, Response
from fastapi.responses import RedirectResponse

from cronpilot.adapters.console.pages import (
    COOKIE,
    PREFIX,
    Viewer,
    checked_form,
    console_router,
    form_fields,
    render,
    session_viewer,
)
from cronpilot.adapters.web.context import Context
from cronpilot.domain.access.access import Principal
from cronpilot.domain.access.tokens import SESSION_SPAN
from cronpilot.domain.errors import TokenExpired
from cronpilot.usecases.access import sign_in, sign_out

router = console_router()

CROSS_SITE = "Refused: this sign-in form was posted from another site."
UNKNOWN = "That token is unknown or revoked: create one with `cronpilot tokens create`."


def _landing(wanted: str | None, principal: Principal | None = None) -> str:
    """Where to go once signed in: a console page asked for, never another site; for a token
    limited to jobs, the endpoints of its first job."""
    if wanted and wanted.startswith(f"{PREFIX}/") and not wanted.startswith("//"):
        return wanted
    if principal is not None and principal.jobs:
        return f"{PREFIX}/endpoints?job={sorted(principal.jobs)[0]}"
    return f"{PREFIX}/endpoints"


@router.get("")
@router.get("/")
async def home() -> RedirectResponse:
    return RedirectResponse(f"{PREFIX}/endpoints", HTTPStatus.SEE_OTHER)


@router.get("/login")
async def login_form(request: Request, ctx: Context, next: str | None = None) -> Response:
    return render(request, "login.html", None, ctx.clock.now(), wanted=_landing(next))


def cross_site(request: Request) -> bool:
    """Whether the browser says the form was posted from another site: an `Origin` whose host
    is not the one asked for (or `null`), or `Sec-Fetch-Site: cross-site`. Without either
    header (curl, a script) the request is no browser's and the token itself is the proof."""
    if request.headers.get("sec-fetch-site") == "cross-site":
        return True
    origin = request.headers.get("origin")
    if origin is None:
        return False
    return urlsplit(origin).netloc.lower() != request.headers.get("host", "").lower()


@router.post("/login")
async def login(request: Request, ctx: Context) -> Response:
    if cross_site(request):
        # Login CSRF: another site must not sign a visitor in with the attacker's token.
        return render(
            request,
            "login.html",
            None,
            ctx.clock.now(),
            code=HTTPStatus.FORBIDDEN,
            wanted=_landing(None),
            failed=CROSS_SITE,
        )
    fields = await form_fields(request)
    secret = fields.get("token", "").strip()
    wanted = fields.get("next")
    try:
        opened = await sign_in(ctx.store, secret, ctx.clock.now()) if secret else None
        failed = UNKNOWN
    except TokenExpired as error:
        opened, failed = None, f"{error}: ask an admin for a new one."
    if opened is None:
        return render(
            request,
            "login.html",
            None,
            ctx.clock.now(),
            code=HTTPStatus.UNAUTHORIZED,
            wanted=_landing(wanted),
            failed=failed,
        )
    session_id, principal = opened
    response = RedirectResponse(_landing(wanted, principal), HTTPStatus.SEE_OTHER)
    response.set_cookie(
        COOKIE,
        session_id,
        max_age=int(SESSION_SPAN.total_seconds()),
        path=PREFIX,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


@router.post("/logout")
async def logout(
    request: Request, ctx: Context, who: Annotated[Viewer, Depends(session_viewer)]
) -> Response:
    """End the session on the server, then forget the cookie."""
    await checked_form(request, who)
    await sign_out(ctx.store, request.cookies[COOKIE])
    response = RedirectResponse(f"{PREFIX}/login", HTTPStatus.SEE_OTHER)
    response.delete_cookie(COOKIE, path=PREFIX, httponly=True, samesite="strict")
    return response
