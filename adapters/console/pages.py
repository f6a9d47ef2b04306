"""What every console page shares: the signed-in viewer (a server-side session whose random
id the cookie holds), the CSRF token of its forms, rendering, and errors shown as pages
instead of problem documents."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from http import HTTPStatus
from pathlib import Path
from typing import Annotated, Any, TypeVar
from urllib.parse import parse_qsl, quote

from fastapi import APIRouter, Depends, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.routing import APIRoute
from fastapi.templating import Jinja2Templates

from cronpilot.adapters.error_line import error_line
from cronpilot.adapters.jsonvalue import dump_json
from cronpilot.adapters.views.formats import clock_time, relative, span
from cronpilot.adapters.web.context import Context
from cronpilot.adapters.web.problems import status_of
from cronpilot.adapters.web.strict import one_value_each
from cronpilot.domain.access.access import Principal, Reach, Scope
from cronpilot.domain.errors import CronpilotError, InvalidConfig, TokenExpired
from cronpilot.usecases.access import session_principal

E = TypeVar("E", bound=StrEnum)

PREFIX = "/console"
COOKIE = "cronpilot_console"
PAGE = 50
"""Rows on a page of a console list."""
FORM_BYTES = 16_384
"""A console form holds a reason and a token at most: a longer body is refused unread."""
SECURITY_HEADERS = {
    # Every script and style is a file of the wheel; Cytoscape styles its canvas itself.
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
NOTES = {
    "paused": "Paused.",
    "resumed": "Resumed: the next run is planned again from the schedule.",
    "queued": "A run is queued: a scheduler worker makes it now.",
    "job-paused": "Job paused: none of its endpoints runs until it is resumed.",
    "job-resumed": "Job resumed: its endpoints run as their own pauses and plans say.",
    "cancelled": "Cancelled.",
    "cancel-asked": "Cancel asked: the worker running it cuts it short.",
    "retried": "A new run is queued: a scheduler worker makes it now.",
    "retried-alone": "Retried: this endpoint alone runs again in this DAG run.",
    "cleared": "Cleared: this endpoint and what depends on it run again in this DAG run.",
    "approved": "Approved: the change is in force.",
    "refused": "Approved, but the guardrails refused it now: see its outcome.",
    "rejected": "Rejected.",
    "gate-approved": "Approved: the waiting dependant runs next.",
    "gate-rejected": "Rejected: the waiting dependant is skipped.",
    "redelivered": "Queued again: a scheduler worker's notifier sends it now.",
    "test-sent": "Test alert queued for each webhook and target: see how delivery went below.",
}
"""The one-line notes a redirect after a form may show (`?note=`): fixed words, never text
from the query."""

TEMPLATES = Jinja2Templates(directory=Path(__file__).parent / "templates")
TEMPLATES.env.filters["span"] = span
# A stored body may nest deeper than `json.dumps` can recurse.
TEMPLATES.env.filters["pretty"] = lambda value: dump_json(value, indent=2, sort_keys=True)


class LoginNeeded(Exception):
    """No cookie, or one of no open session (ended, expired, or its token revoked)."""


class Refused(Exception):
    """The viewer's scope is too narrow, or a form came without this session's CSRF token."""


@dataclass(frozen=True, slots=True)
class Viewer:
    principal: Principal
    csrf: str
    """This session's form token: an HMAC of its cookie under the server's key."""

    @property
    def reach(self) -> Reach:
        return self.principal.reach

    @property
    def may_write(self) -> bool:
        return self.principal.may(Scope.WRITE)

    @property
    def may_admin(self) -> bool:
        return self.principal.may(Scope.ADMIN)


def csrf_token(request: Request, session_id: str) -> str:
    key: bytes = request.app.state.console_key
    return hmac.new(key, session_id.encode(), hashlib.sha256).hexdigest()


async def session_viewer(request: Request, ctx: Context) -> Viewer:
    """The viewer of the cookie's session, whatever page it asks for."""
    session_id = request.cookies.get(COOKIE)
    if not session_id:
        raise LoginNeeded
    try:
        principal = await session_principal(ctx.store, session_id, ctx.clock.now())
    except TokenExpired:
        principal = None
    if principal is None:
        raise LoginNeeded
    return Viewer(principal, csrf_token(request, session_id))


SignedIn = Annotated[Viewer, Depends(session_viewer)]
"""The viewer of a page: what its token may see is `viewer.principal.reach`, which the page
hands to every query it asks."""


async def form_fields(request: Request) -> dict[str, str]:
    """An url-encoded form's fields (the last of repeated names), refused past `FORM_BYTES`."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > FORM_BYTES:
            raise Refused("the form is too large")
    return dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))


@dataclass(frozen=True, slots=True)
class Action:
    """A form posted by a viewer with the scope it needs and this session's CSRF token."""

    viewer: Viewer
    fields: dict[str, str]

    @property
    def actor(self) -> str:
        return self.viewer.principal.actor

    @property
    def reach(self) -> Reach:
        return self.viewer.reach

    def text(self, name: str) -> str:
        """A field with its runs of white space made one space."""
        return " ".join(self.fields.get(name, "").split())


async def checked_form(request: Request, who: Viewer) -> dict[str, str]:
    """The form's fields, refused (`Refused`) without this session's CSRF token."""
    fields = await form_fields(request)
    if not hmac.compare_digest(fields.get("csrf", ""), who.csrf):
        raise Refused("the form is stale or did not come from this console: reload the page")
    return fields


def acting(scope: Scope) -> Callable[..., Coroutine[Any, Any, Action]]:
    async def action(request: Request, who: SignedIn) -> Action:
        fields = await checked_form(request, who)
        if not who.principal.may(scope):
            raise Refused(
                f"{who.principal.actor} has scope {who.principal.scope}; this needs {scope}"
            )
        return Action(who, fields)

    return action


Reading = Annotated[Action, Depends(acting(Scope.READ))]
Writing = Annotated[Action, Depends(acting(Scope.WRITE))]
Administering = Annotated[Action, Depends(acting(Scope.ADMIN))]


def choice(kind: type[E], name: str, value: str | None) -> E | None:
    """A filter form's select: the empty choice means no filter. Raises `InvalidConfig`."""
    if not value:
        return None
    try:
        return kind(value)
    except ValueError:
        raise InvalidConfig(name, f"one of {', '.join(kind)}, not {value!r}") from None


def render(
    request: Request,
    template: str,
    who: Viewer | None,
    now: datetime,
    *,
    code: int = HTTPStatus.OK,
    **context: Any,
) -> HTMLResponse:
    note = NOTES.get(request.query_params.get("note", ""))
    return TEMPLATES.TemplateResponse(
        request,
        template,
        {
            "who": who,
            "now": now,
            "note": note,
            "prefix": PREFIX,
            "ago": lambda moment: relative(moment, now),
            "at": lambda moment: "-" if moment is None else clock_time(moment, now),
            **context,
        },
        status_code=code,
    )


def back(path: str, note: str) -> RedirectResponse:
    """After a form: see the page again (a reload does not post twice)."""
    return RedirectResponse(f"{path}?note={note}", status_code=HTTPStatus.SEE_OTHER)


def login_path(request: Request) -> str:
    return f"{PREFIX}/login?next={quote(request.url.path, safe='/')}"


class ConsoleRoute(APIRoute):
    """A console route: its query parameters are given once each, with a value, as the API's
    (`one_value_each`); a visitor not signed in is sent to the login form, and a refusal or a
    failure is a page in words with its status, not the API's problem document."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def page(request: Request) -> Response:
            try:
                if invalid := one_value_each(request):
                    raise RequestValidationError(invalid)
                response = await handler(request)
            except LoginNeeded:
                response = RedirectResponse(login_path(request), HTTPStatus.SEE_OTHER)
            except Refused as refused:
                response = _error(request, HTTPStatus.FORBIDDEN, str(refused))
            except CronpilotError as error:
                response = _error(request, status_of(error), str(error))
            except RequestValidationError as invalid:
                detail = "; ".join(
                    f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in invalid.errors()
                )
                response = _error(request, HTTPStatus.UNPROCESSABLE_ENTITY, detail)
            response.headers.update(SECURITY_HEADERS)
            return response

        return page


def console_router() -> APIRouter:
    """A router for console pages: under `PREFIX`, served by `ConsoleRoute`, out of the API's
    OpenAPI document."""
    return APIRouter(prefix=PREFIX, route_class=ConsoleRoute, include_in_schema=False)


def _error(request: Request, status: HTTPStatus, detail: str) -> HTMLResponse:
    now = request.app.state.context.clock.now()
    return render(
        request, "error.html", None, now, code=status, status=status, detail=error_line(detail)
    )
