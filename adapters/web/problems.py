"""Every error as an RFC 9457 problem document (`application/problem+json`): ours, FastAPI's
validation errors, and the router's own 404/405. The one table from error type to status."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from cronpilot.adapters.error_line import error_line
from cronpilot.domain.errors import (
    AmbiguousId,
    AnalysisBusy,
    ApprovalNotPending,
    ConflictError,
    CronpilotError,
    InvalidConfig,
    InvalidCursor,
    InvalidQuery,
    InvalidRunRequest,
    InvalidSchedule,
    InvalidTimeRange,
    InvalidTokenName,
    InvalidTokenTerms,
    NotFound,
    OutOfReach,
    PreconditionFailed,
    ProposalNotPending,
    RunFinished,
    SlotAlreadyRun,
    StillDependedOn,
    StoreUnavailable,
    UnsafeURL,
    ValueRejected,
)

PROBLEM_JSON = "application/problem+json"

STATUSES: tuple[tuple[tuple[type[CronpilotError], ...], HTTPStatus], ...] = (
    ((NotFound,), HTTPStatus.NOT_FOUND),
    (
        (
            InvalidConfig,
            InvalidSchedule,
            InvalidRunRequest,
            UnsafeURL,
            ValueRejected,
            InvalidCursor,
            InvalidTimeRange,
            AmbiguousId,
            InvalidQuery,
            InvalidTokenName,
            InvalidTokenTerms,
        ),
        HTTPStatus.BAD_REQUEST,
    ),
    ((OutOfReach,), HTTPStatus.FORBIDDEN),
    ((PreconditionFailed,), HTTPStatus.PRECONDITION_FAILED),
    (
        (
            ProposalNotPending,
            ApprovalNotPending,
            RunFinished,
            StillDependedOn,
            ConflictError,
            SlotAlreadyRun,
            AnalysisBusy,
        ),
        HTTPStatus.CONFLICT,
    ),
    ((StoreUnavailable,), HTTPStatus.SERVICE_UNAVAILABLE),
)
"""First match wins; an error of no row is a 500 (a bug, or a failure with no better name)."""


def status_of(error: CronpilotError) -> HTTPStatus:
    for kinds, status in STATUSES:
        if isinstance(error, kinds):
            return status
    return HTTPStatus.INTERNAL_SERVER_ERROR


def problem_type(status: HTTPStatus) -> str:
    """A stable URI per kind of problem, named after its status."""
    return f"urn:cronpilot:problem:{status.phrase.lower().replace(' ', '-')}"


def problem(
    status: HTTPStatus,
    detail: str,
    headers: dict[str, str] | None = None,
    **extensions: Any,
) -> JSONResponse:
    body = {
        "type": problem_type(status),
        "title": status.phrase,
        "status": int(status),
        "detail": error_line(detail),
        **extensions,
    }
    return JSONResponse(body, status_code=status, headers=headers, media_type=PROBLEM_JSON)


UNAUTHORIZED = "a valid API token is required: Authorization: Bearer <token>"


class Unauthorized(Exception):
    """No bearer token, one no token matches, or an expired one (its detail says so): 401
    with a challenge."""

    def __init__(self, detail: str = UNAUTHORIZED) -> None:
        super().__init__(detail)
        self.detail = detail


class Forbidden(Exception):
    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def install_problem_handlers(app: FastAPI) -> None:
    async def ours(_: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, CronpilotError)
        return problem(status_of(error), str(error))

    async def http(_: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, HTTPException)
        status = HTTPStatus(error.status_code)
        detail = error.detail if isinstance(error.detail, str) else status.description
        return problem(status, detail, headers=dict(error.headers or {}))

    async def invalid(_: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, RequestValidationError)
        errors = [
            {"where": ".".join(str(part) for part in e["loc"]), "reason": e["msg"]}
            for e in error.errors()
        ]
        detail = "; ".join(f"{e['where']}: {e['reason']}" for e in errors)
        return problem(HTTPStatus.UNPROCESSABLE_ENTITY, detail, errors=errors)

    async def unauthorized(_: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, Unauthorized)
        return problem(
            HTTPStatus.UNAUTHORIZED, error.detail, headers={"WWW-Authenticate": "Bearer"}
        )

    async def forbidden(_: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, Forbidden)
        return problem(HTTPStatus.FORBIDDEN, error.detail)

    async def crashed(_: Request, error: Exception) -> JSONResponse:
        # The traceback goes to the server's log (uvicorn's), never to the client.
        return problem(HTTPStatus.INTERNAL_SERVER_ERROR, "internal error; see the server's log")

    app.add_exception_handler(CronpilotError, ours)
    app.add_exception_handler(HTTPException, http)
    app.add_exception_handler(RequestValidationError, invalid)
    app.add_exception_handler(Unauthorized, unauthorized)
    app.add_exception_handler(Forbidden, forbidden)
    app.add_exception_handler(Exception, crashed)
