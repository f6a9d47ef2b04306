"""`AiohttpDispatcher` against a misbehaving server on 127.0.0.1: every failure is a `Response`.

All traffic stays on loopback: the dispatcher under test allowlists 127.0.0.1 only, and every
"blocked" address in these tests is refused before any connection is attempted.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any
from urllib.parse import quote

import pytest
from standardwebhooks import Webhook

from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
from cronpilot.adapters.http.signing import ID_HEADER, Signer, SigningKeys
from cronpilot.domain.model import BodyAbsence, ErrorKind, HttpRequest, Response
from cronpilot.scheduler.requests import SLOT_HEADER
from tests.integration.scheduler.endpoint_server import EndpointServer
from tests.support.hostile_server import (
    HUGE_BYTES,
    LONG_REASON,
    UNSTORABLE_JSON,
    HostileServer,
    unused_port,
)

LOOPBACK_ONLY = ["127.0.0.1/32"]
MAX_REDIRECTS = 3
SECRET = "whsec_" + base64.b64encode(b"s3cret-signing-key").decode()
JSON_RAW = json.dumps({"ok": True, "items": [1, 2, 3]}).encode()
JSON_SIZE = len(JSON_RAW)


@pytest.fixture
async def server() -> AsyncIterator[HostileServer]:
    async with HostileServer() as hostile:
        yield hostile


@pytest.fixture
async def dispatcher() -> AsyncIterator[AiohttpDispatcher]:
    dispatcher = AiohttpDispatcher(
        allowed_networks=LOOPBACK_ONLY,
        max_redirects=MAX_REDIRECTS,
        signer=Signer(SigningKeys(SECRET)),
    )
    yield dispatcher
    await dispatcher.close()


def call(
    url: str,
    *,
    method: str = "GET",
    body: Any = None,
    headers: dict[str, str] | None = None,
    timeout: float = 5.0,
    cap: int = 100_000,
) -> HttpRequest:
    return HttpRequest(
        method=method,
        url=url,
        headers=headers or {},
        body=body,
        timeout_seconds=timeout,
        max_response_bytes=cap,
    )


def redirect_to(server: HostileServer, target: str, status: int = 302) -> str:
    return server.url(f"/redirect-to?status={status}&url={quote(target, safe='')}")


def assert_failed(response: Response, kind: ErrorKind) -> None:
    assert response.error_kind is kind, response.error_message
    assert response.status_code is None
    assert response.body is None
    assert response.body_absence is BodyAbsence.NO_RESPONSE
    assert response.error_message


async def test_json_is_stored_with_size_and_hash(
    server: HostileServer, dispatcher: AiohttpDispatcher
) -> None:
    response = await dispatcher.dispatch(call(server.url("/json")))

    assert response.ok
    assert response.status_code == 200
    assert response.body == {"ok": True, "items": [1, 2, 3]}
    assert response.body_absence is None
    assert response.size_bytes == JSON_SIZE
    assert response.body_hash == hashlib.sha256(JSON_RAW).hexdigest()
    assert response.started_at is not None and response.finished_at is not None
    assert response.started_at.utcoffset() is not None
    assert response.started_at <= response.finished_at


@pytest.mark.parametrize(
    ("path", "status", "body", "absence", "kind"),
    [
        ("/problem", 422, {"title": "invalid input", "status": 422}, None, ErrorKind.HTTP_STATUS),
        ("/fail", 500, {"error": "database down"}, None, ErrorKind.HTTP_STATUS),
        ("/html", 200, None, BodyAbsence.NOT_JSON, None),
        ("/empty", 200, None, BodyAbsence.EMPTY, None),
        ("/invalid-json", 200, None, BodyAbsence.UNPARSABLE, None),
        ("/redirect/2", 200, {"ok": True, "items": [1, 2, 3]}, None, None),
    ],
)
async def test_answers_are_classified(
    server: HostileServer,
    dispatcher: AiohttpDispatcher,
    *,
    path: str,
    status: int,
    body: Any,
    absence: BodyAbsence | None,
    kind: ErrorKind | None,
) -> None:
    response = await dispatcher.dispatch(call(server.url(path)))

    assert response.status_code == status
    assert response.body == body
    assert response.body_absence is absence
    assert response.error_kind is kind
    if kind is ErrorKind.HTTP_STATUS:
        assert response.error_message is not None
        assert str(status) in response.error_message


async def test_a_long_reason_phrase_is_recorded_cut(
    server: HostileServer, dispatcher: AiohttpDispatcher
) -> None:
    response = await dispatcher.dispatch(call(server.url("/long-reason")))

    assert response.status_code == 503
    assert response.error_message == f"HTTP 503 {'x' * 80}… ({LONG_REASON:,} chars)"


async def test_unparsable_json_is_measured(
    server: HostileServer, dispatcher: AiohttpDispatcher
) -> None:
    response = await dispatcher.dispatch(call(server.url("/invalid-json")))

    assert response.size_bytes == len(b'{"ok": tru')
    assert response.body_hash == hashlib.sha256(b'{"ok": tru').hexdigest()


@pytest.mark.parametrize("case", sorted(UNSTORABLE_JSON))
async def test_json_that_postgresql_refuses_is_unparsable(
    server: HostileServer, dispatcher: AiohttpDispatcher, case: str
) -> None:
    response = await dispatcher.dispatch(call(server.url(f"/unstorable/{case}")))

    assert response.ok
    assert response.body is None
    assert response.body_absence is BodyAbsence.UNPARSABLE
    assert response.size_bytes == len(UNSTORABLE_JSON[case].encode())


async def test_an_escaped_surrogate_pair_is_one_character(
    server: HostileServer, dispatcher: AiohttpDispatcher
) -> None:
    request = call(server.url("/echo"), method="POST", body={"face": "\N{GRINNING FACE}"})

    response = await dispatcher.dispatch(request)

    assert response.body_absence is None, response.body_absence
    assert response.body["body"] == '{"face":"\N{GRINNING FACE}"}'


@pytest.mark.parametrize(("cap", "stored"), [(JSON_SIZE, True), (JSON_SIZE - 1, False)])
async def test_the_cap_is_inclusive(
    server: HostileServer, dispatcher: AiohttpDispatcher, cap: int, stored: bool
) -> None:
    response = await dispatcher.dispatch(call(server.url("/json"), cap=cap))

    assert (response.body is not None) is stored
    assert (response.body_absence is BodyAbsence.TOO_LARGE) is not stored


async def test_a_streamed_body_over_the_cap_stops_the_download(
    server: HostileServer, dispatcher: AiohttpDispatcher
) -> None:
    response = await dispatcher.dispatch(call(server.url("/huge"), cap=100_000))

    assert response.status_code == 200
    assert response.body_absence is BodyAbsence.TOO_LARGE
    assert response.body is None
    assert response.size_bytes == 100_001
    async with asyncio.timeout(5):
        await server.huge_finished.wait()
    assert server.huge_bytes_written < HUGE_BYTES // 5


async def test_the_cap_holds_for_the_decompressed_body(
    server: HostileServer, dispatcher: AiohttpDispatcher
) -> None:
    response = await dispatcher.dispatch(call(server.url("/bomb"), cap=100_000))

    assert response.status_code == 200
    assert response.body_absence is BodyAbsence.TOO_LARGE
    assert response.size_bytes == 100_001


async def test_a_declared_length_over_the_cap_is_not_read_at_all(
    server: HostileServer, dispatcher: AiohttpDispatcher
) -> None:
    response = await dispatcher.dispatch(call(server.url("/huge?declared=1"), cap=100_000))

    assert response.body_absence is BodyAbsence.TOO_LARGE
    assert response.size_bytes == HUGE_BYTES
    async with asyncio.timeout(5):
        await server.huge_finished.wait()
    assert server.huge_bytes_written < HUGE_BYTES // 5


async def test_a_hanging_endpoint_times_out(
    server: HostileServer, dispatcher: AiohttpDispatcher
) -> None:
    response = await dispatcher.dispatch(call(server.url("/hang"), timeout=0.2))

    assert_failed(response, ErrorKind.TIMEOUT)
    assert response.started_at is not None and response.finished_at is not None
    assert (response.finished_at - response.started_at).total_seconds() < 2


async def test_a_reset_connection_is_a_connection_error(
    server: HostileServer, dispatcher: AiohttpDispatcher
) -> None:
    response = await dispatcher.dispatch(call(server.url("/reset")))

    assert_failed(response, ErrorKind.CONNECTION)


async def test_a_refused_connection_is_a_connection_error(dispatcher: AiohttpDispatcher) -> None:
    response = await dispatcher.dispatch(call(f"http://127.0.0.1:{unused_port()}/json"))

    assert_failed(response, ErrorKind.CONNECTION)


async def test_a_redirect_loop_stops_at_the_limit(
    server: HostileServer, dispatcher: AiohttpDispatcher
) -> None:
    response = await dispatcher.dispatch(call(server.url("/loop")))

    assert_failed(response, ErrorKind.TOO_MANY_REDIRECTS)
    assert server.hits == ["/loop"] * (MAX_REDIRECTS + 1)


async def test_a_chain_one_hop_too_long_is_refused(
    server: HostileServer, dispatcher: AiohttpDispatcher
) -> None:
    within = await dispatcher.dispatch(call(server.url(f"/redirect/{MAX_REDIRECTS - 1}")))
    beyond = await dispatcher.dispatch(call(server.url(f"/redirect/{MAX_REDIRECTS}")))

    assert within.ok
    assert_failed(beyond, ErrorKind.TOO_MANY_REDIRECTS)


@pytest.mark.parametrize(
    "target",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/admin",
        "http://[::ffff:169.254.169.254]/",
        "http://0x7f.1/",
        "file:///etc/passwd",
        "http://[::1",
    ],
)
async def test_a_redirect_to_a_blocked_address_is_refused_before_connecting(
    server: HostileServer, dispatcher: AiohttpDispatcher, target: str
) -> None:
    response = await dispatcher.dispatch(call(redirect_to(server, target)))

    assert_failed(response, ErrorKind.BLOCKED_ADDRESS)
    assert len(server.hits) == 1


@pytest.mark.parametrize(
    ("status", "method", "body"),
    [
        (301, "GET", ""),
        (302, "GET", ""),
        (303, "GET", ""),
        (307, "POST", '{"n":1}'),
        (308, "POST", '{"n":1}'),
    ],
)
async def test_redirected_posts_follow_browser_rules(
    server: HostileServer, dispatcher: AiohttpDispatcher, status: int, method: str, body: str
) -> None:
    request = call(redirect_to(server, "/echo", status), method="POST", body={"n": 1})

    response = await dispatcher.dispatch(request)

    assert response.ok, response.error_message
    assert response.body["method"] == method
    assert response.body["body"] == body


async def test_headers_body_and_signature_reach_the_endpoint(
    server: HostileServer, dispatcher: AiohttpDispatcher
) -> None:
    url = server.url("/echo?x=1")
    request = replace(
        call(url, method="post", body={"name": "café", "n": [1, 2]}, headers={"X-Team": "a"}),
        message_id="run-1",
    )

    response = await dispatcher.dispatch(request)

    echoed = response.body
    headers = echoed["headers"]
    assert echoed["method"] == "POST"
    assert json.loads(echoed["body"]) == {"name": "café", "n": [1, 2]}
    assert headers["X-Team"] == "a"
    assert headers["Content-Type"] == "application/json"
    assert headers["User-Agent"] == "cronpilot/0.1"
    # Standard Webhooks: a receiver verifies the call with the reference library.
    Webhook(SECRET).verify(echoed["body"].encode(), headers)
    assert {name.lower(): value for name, value in headers.items()}[ID_HEADER] == "run-1"


async def test_secret_headers_do_not_follow_a_redirect_to_another_origin(
    server: HostileServer, dispatcher: AiohttpDispatcher
) -> None:
    other_origin = f"http://localhost:{server.port}/echo"
    headers = {"Authorization": "Bearer abc", "X-Team": "a"}

    same = await dispatcher.dispatch(call(redirect_to(server, "/echo"), headers=headers))
    other = await dispatcher.dispatch(call(redirect_to(server, other_origin), headers=headers))

    assert same.body["headers"]["Authorization"] == "Bearer abc"
    assert "Authorization" not in other.body["headers"]
    assert other.body["headers"]["X-Team"] == "a"


async def test_without_the_allowlist_loopback_is_never_contacted(server: HostileServer) -> None:
    dispatcher = AiohttpDispatcher()
    try:
        by_address = await dispatcher.dispatch(call(server.url("/json")))
        by_name = await dispatcher.dispatch(call(f"http://localhost:{server.port}/json"))
    finally:
        await dispatcher.close()

    assert_failed(by_address, ErrorKind.BLOCKED_ADDRESS)
    assert_failed(by_name, ErrorKind.BLOCKED_ADDRESS)
    assert "127.0.0.1" in (by_name.error_message or "")
    assert server.hits == []


async def test_an_allowlisted_name_resolves_to_its_allowed_address(
    server: HostileServer, dispatcher: AiohttpDispatcher
) -> None:
    response = await dispatcher.dispatch(call(f"http://localhost:{server.port}/json"))

    assert response.ok, response.error_message


async def test_concurrent_calls_share_the_session(
    server: HostileServer, dispatcher: AiohttpDispatcher
) -> None:
    async with asyncio.timeout(10):
        responses = await asyncio.gather(
            *(dispatcher.dispatch(call(server.url("/json"))) for _ in range(50))
        )

    assert all(response.ok for response in responses)
    assert len(server.hits) == 50


async def test_unexpected_errors_are_reported_without_leaking_header_values(
    server: HostileServer, dispatcher: AiohttpDispatcher, caplog: pytest.LogCaptureFixture
) -> None:
    bad = call(server.url("/json"), headers={"Authorization": "Bearer hunter2\r\nX-Evil: 1"})

    with caplog.at_level(logging.DEBUG):
        response = await dispatcher.dispatch(bad)

    assert_failed(response, ErrorKind.INTERNAL)
    assert [r.action for r in caplog.records if r.name.startswith("cronpilot.adapters.http")] == [
        "dispatch_internal_error"
    ]
    assert "hunter2" not in caplog.text
    assert "hunter2" not in (response.error_message or "")
    assert server.hits == []


async def test_a_fan_out_wider_than_the_pool_waits_for_connections_outside_its_timeouts() -> None:
    """Eight calls of 0.3 s through two connections take 1.2 s in all; each answers within its
    own 1 s timeout once its request goes out, so none is recorded as timed out."""
    dispatcher = AiohttpDispatcher(allowed_networks=LOOPBACK_ONLY, max_connections=2)
    try:
        async with EndpointServer() as endpoints, asyncio.timeout(10):
            responses = await asyncio.gather(
                *(
                    dispatcher.dispatch(
                        call(
                            endpoints.url(f"/slow/e{i}?ms=300"),
                            headers={SLOT_HEADER: "2030-01-01T00:00:00+00:00"},
                            timeout=1.0,
                        )
                    )
                    for i in range(8)
                )
            )
            assert endpoints.max_in_flight == 2
    finally:
        await dispatcher.close()

    assert [response.error_kind for response in responses] == [None] * 8
    for response in responses:
        assert response.started_at is not None and response.finished_at is not None
        assert (response.finished_at - response.started_at).total_seconds() < 1.0
