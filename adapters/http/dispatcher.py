"""The `Dispatcher` port over aiohttp: one guarded, pooled session for every endpoint call.

Redirects are followed here rather than by aiohttp so that every hop passes the guard again,
and every failure an endpoint can cause comes back as a `Response`, never as an exception. A
conditional call (`HttpRequest.conditional_key`) carries its endpoint's last validators, and a
`304` comes back as the answer it confirmed (`adapters.http.conditional`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

import aiohttp
from aiohttp import hdrs
from multidict import CIMultiDict
from yarl import URL

from cronpilot.adapters.http.body import StoredBody, read_json_body
from cronpilot.adapters.http.conditional import (
    DEFAULT_BUDGET_BYTES,
    Confirmable,
    ConfirmableAnswers,
)
from cronpilot.adapters.http.guard import AddressPolicy, parse_url
from cronpilot.adapters.http.resolver import GuardedResolver
from cronpilot.adapters.http.signing import Signer
from cronpilot.adapters.http.steering import read_steering
from cronpilot.domain.access.secrets import is_secret_header, loggable_url, without_url
from cronpilot.domain.errors import UnsafeURL
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.model import BodyAbsence, ErrorKind, HttpRequest, Response
from cronpilot.domain.ports import Dispatcher
from cronpilot.domain.runs.excerpt import excerpt
from cronpilot.domain.runs.sent_request import json_text

logger = logging.getLogger(__name__)

_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


class AiohttpDispatcher(Dispatcher):
    """Calls endpoints through one lazily opened `aiohttp.ClientSession`.

    The session is opened on the first dispatch because aiohttp binds it to the running loop;
    `close()` must be awaited on that same loop. Cookies are never kept between calls, since
    the session is shared by unrelated endpoints.
    """

    def __init__(
        self,
        allowed_networks: Sequence[str] = (),
        max_redirects: int = 5,
        signer: Signer | None = None,
        user_agent: str = "cronpilot/0.1",
        max_connections: int = 100,
        *,
        max_retry_after_seconds: float = 3600.0,
        conditional_budget_bytes: int = DEFAULT_BUDGET_BYTES,
    ) -> None:
        self._policy = AddressPolicy.from_networks(allowed_networks)
        self._max_redirects = max_redirects
        self._signer = signer
        self._user_agent = user_agent
        self._max_connections = max_connections
        self._connections = asyncio.Semaphore(max_connections)
        self._max_retry_after = max_retry_after_seconds
        self._answers = ConfirmableAnswers(conditional_budget_bytes)
        self._session: aiohttp.ClientSession | None = None
        self._resolver: GuardedResolver | None = None

    async def dispatch(self, request: HttpRequest) -> Response:
        # A call waits here for a connection of the pool, not inside its timeout: the timeout is
        # the endpoint's, from when its request can go out (aiohttp's own would count the wait).
        async with self._connections:
            started = datetime.now(UTC)
            try:
                async with asyncio.timeout(request.timeout_seconds):
                    return await self._exchange(request, started)
            except TimeoutError:
                message = f"no complete answer within {request.timeout_seconds:g} s"
                return _failure(started, ErrorKind.TIMEOUT, message)
            except UnsafeURL as exc:
                refused = loggable_url(exc.url)
                logger.warning(
                    "refused to call %s",
                    refused,
                    extra=log_extra("dispatch_refused", url=loggable_url(request.url)),
                )
                reason = without_url(exc.reason, exc.url)
                return _failure(started, ErrorKind.BLOCKED_ADDRESS, f"refused {refused}: {reason}")
            except aiohttp.ClientError as exc:
                said = without_url(f"{type(exc).__name__}: {exc}", request.url)
                return _failure(started, ErrorKind.CONNECTION, said)
            except Exception as exc:
                # Not `logger.exception`: a traceback's frames may quote the URL or headers.
                said = without_url(f"{type(exc).__name__}: {exc}", request.url)
                logger.error(
                    "unexpected error calling %s: %s",
                    loggable_url(request.url),
                    said,
                    extra=log_extra("dispatch_internal_error", method=request.method),
                )
                return _failure(started, ErrorKind.INTERNAL, said)

    async def close(self) -> None:
        session, self._session = self._session, None
        resolver, self._resolver = self._resolver, None
        if session is not None:
            await session.close()
        if resolver is not None:
            await resolver.close()

    def _open_session(self) -> aiohttp.ClientSession:
        self._resolver = GuardedResolver(self._policy)
        connector = aiohttp.TCPConnector(resolver=self._resolver, limit=self._max_connections)
        self._session = aiohttp.ClientSession(
            connector=connector,
            headers={hdrs.USER_AGENT: self._user_agent},
            timeout=aiohttp.ClientTimeout(total=None),
            cookie_jar=aiohttp.DummyCookieJar(),
        )
        return self._session

    async def _exchange(self, request: HttpRequest, started: datetime) -> Response:
        session = self._session or self._open_session()
        method = request.method.upper()
        url = parse_url(request.url)
        body = None if request.body is None else _encode_json(request.body)
        headers: Mapping[str, str] = request.headers
        key = request.conditional_key if method == "GET" else None
        confirmable = None if key is None else self._answers.get(key, request.url)
        if confirmable is not None:
            headers = {**headers, **confirmable.validators()}
        for _ in range(self._max_redirects + 1):
            self._policy.check_target(url)
            async with session.request(
                method,
                url,
                headers=self._outgoing_headers(headers, request.message_id, method, url, body),
                data=body,
                allow_redirects=False,
            ) as response:
                status = response.status
                location = (
                    response.headers.get(hdrs.LOCATION) if status in _REDIRECT_STATUSES else None
                )
                if location is None:
                    if confirmable is not None and status == 304:
                        return _answer(
                            response,
                            confirmable.stored,
                            started,
                            self._max_retry_after,
                            confirmable,
                        )
                    stored = await read_json_body(response, request.max_response_bytes)
                    if key is not None and 200 <= status < 300:
                        self._answers.keep(key, request.url, status, response.headers, stored)
                    return _answer(response, stored, started, self._max_retry_after)
            next_url = _redirect_target(url, location)
            if _switches_to_get(status, method):
                method, body = "GET", None
            if _origin(next_url) != _origin(url):
                headers = _without_secrets(headers)
            url = next_url
        last = loggable_url(str(url))
        message = f"more than {self._max_redirects} redirects, the last pointing to {last}"
        return _failure(started, ErrorKind.TOO_MANY_REDIRECTS, message)

    def _outgoing_headers(
        self,
        headers: Mapping[str, str],
        message_id: str | None,
        method: str,
        url: URL,
        body: bytes | None,
    ) -> Mapping[str, str]:
        if body is None and self._signer is None:
            return headers
        outgoing = CIMultiDict(headers)
        if body is not None:
            outgoing.setdefault(hdrs.CONTENT_TYPE, "application/json")
        if self._signer is not None:
            now = datetime.now(UTC)
            outgoing.update(self._signer.headers(message_id, method, str(url), body or b"", now))
        return outgoing


def _encode_json(body: object) -> bytes:
    """Encoded once so the signed bytes are exactly the bytes sent."""
    return json_text(body).encode()


def _switches_to_get(status: int, method: str) -> bool:
    """Browsers' behaviour, which endpoints expect: 303 always, 301/302 only after a POST."""
    return (status == 303 and method != "HEAD") or (status in (301, 302) and method == "POST")


def _without_secrets(headers: Mapping[str, str]) -> dict[str, str]:
    """Credentials meant for one origin must not follow a redirect to another."""
    return {name: value for name, value in headers.items() if not is_secret_header(name)}


def _redirect_target(url: URL, location: str) -> URL:
    return url.join(parse_url(location))


def _origin(url: URL) -> tuple[str, str | None, int | None]:
    return url.scheme, url.raw_host, url.port


def _answer(
    response: aiohttp.ClientResponse,
    stored: StoredBody,
    started: datetime,
    max_retry_after_seconds: float,
    confirmed: Confirmable | None = None,
) -> Response:
    """The answer as observed; a 304 to a conditional call as the answer it `confirmed`."""
    status = response.status if confirmed is None else confirmed.status
    failed = status >= 400
    finished = datetime.now(UTC)
    return Response(
        status_code=status,
        body=stored.body,
        body_text=stored.text,
        body_absence=stored.absence,
        size_bytes=stored.size_bytes,
        body_hash=stored.body_hash,
        error_kind=ErrorKind.HTTP_STATUS if failed else None,
        # A reason phrase is the server's to choose, up to aiohttp's 8 KB line.
        error_message=f"HTTP {response.status} {excerpt(str(response.reason))}" if failed else None,
        started_at=started,
        finished_at=finished,
        steering=read_steering(
            response.status, response.headers, finished, max_retry_after_seconds
        ),
        headers=response.headers,
        not_modified=confirmed is not None,
    )


def _failure(started: datetime, kind: ErrorKind, message: str) -> Response:
    return Response(
        status_code=None,
        body_absence=BodyAbsence.NO_RESPONSE,
        error_kind=kind,
        error_message=message,
        started_at=started,
        finished_at=datetime.now(UTC),
    )
