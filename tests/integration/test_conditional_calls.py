"""Conditional calls against a real loopback server that honours `ETag` / `If-None-Match` and
`Last-Modified` / `If-Modified-Since`: a `304` costs no body and is recorded, in every store, as
the answer it confirmed, which change detection reads as unchanged."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime, parsedate_to_datetime

import pytest
from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy

from cronpilot.adapters.http.body import StoredBody
from cronpilot.adapters.http.conditional import ConfirmableAnswers
from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
from cronpilot.adapters.views.runs import run_view
from cronpilot.domain.graph.change_detection import comparable_hash, ignored_fields
from cronpilot.domain.graph.dag import response_changed
from cronpilot.domain.model import HttpRequest, Run
from cronpilot.domain.ports import Store
from cronpilot.scheduler.requests import request_for
from cronpilot.usecases.declarations import apply_to_catalog
from tests.contract.builders import LEASE_SECONDS, declaration, spec
from tests.support.clock import FakeClock
from tests.support.finishing import finish_one
from tests.support.loopback import LoopbackServer

SINCE = datetime(2026, 11, 28, 8, tzinfo=UTC)


class ValidatingServer(LoopbackServer):
    """`/etag` and `/modified` answer `{"version": N, "served": K}` (`served` counts the bodies
    sent: a field that changes on every whole answer) with an `ETag` or a `Last-Modified`, and
    304 to a request whose validator still holds; `/plain` sends no validator."""

    def __init__(self) -> None:
        self.version = 1
        self.served = 0
        self.asked: list[CIMultiDictProxy[str]] = []

    def app(self) -> web.Application:
        app = web.Application()
        app.add_routes(
            [
                web.get("/etag", self._etag),
                web.get("/modified", self._modified),
                web.get("/plain", self._plain),
            ]
        )
        return app

    def _whole(self, **headers: str) -> web.Response:
        self.served += 1
        return web.json_response({"version": self.version, "served": self.served}, headers=headers)

    async def _etag(self, request: web.Request) -> web.Response:
        self.asked.append(request.headers)
        tag = f'"v{self.version}"'
        if request.headers.get("If-None-Match") == tag:
            return web.Response(status=304, headers={"ETag": tag})
        return self._whole(ETag=tag)

    async def _modified(self, request: web.Request) -> web.Response:
        self.asked.append(request.headers)
        changed = SINCE + timedelta(hours=self.version)
        asked = request.headers.get("If-Modified-Since")
        if asked is not None and parsedate_to_datetime(asked) >= changed:
            return web.Response(status=304)
        return self._whole(**{"Last-Modified": format_datetime(changed, usegmt=True)})

    async def _plain(self, request: web.Request) -> web.Response:
        self.asked.append(request.headers)
        return self._whole()


@pytest.fixture
async def server() -> AsyncIterator[ValidatingServer]:
    async with ValidatingServer() as running:
        yield running


def _get(url: str, key: str | None = "endpoint-1") -> HttpRequest:
    return HttpRequest("GET", url, {}, None, 5.0, 100_000, conditional_key=key)


async def test_a_304_to_if_none_match_is_the_answer_it_confirmed_without_a_body(
    server: ValidatingServer, dispatcher: AiohttpDispatcher
) -> None:
    first = await dispatcher.dispatch(_get(server.url("/etag")))
    second = await dispatcher.dispatch(_get(server.url("/etag")))

    assert server.asked[1]["If-None-Match"] == '"v1"'
    assert server.served == 1
    assert (second.status_code, second.not_modified, second.ok) == (200, True, True)
    assert (second.body, second.body_hash) == (first.body, first.body_hash)
    assert first.not_modified is False


async def test_a_changed_answer_comes_whole_and_its_new_validator_is_asked_next(
    server: ValidatingServer, dispatcher: AiohttpDispatcher
) -> None:
    await dispatcher.dispatch(_get(server.url("/etag")))
    server.version = 2

    changed = await dispatcher.dispatch(_get(server.url("/etag")))
    confirmed = await dispatcher.dispatch(_get(server.url("/etag")))

    assert (changed.not_modified, changed.body) == (False, {"version": 2, "served": 2})
    assert server.asked[2]["If-None-Match"] == '"v2"'
    assert (confirmed.not_modified, confirmed.body) == (True, changed.body)


async def test_last_modified_is_asked_as_if_modified_since(
    server: ValidatingServer, dispatcher: AiohttpDispatcher
) -> None:
    await dispatcher.dispatch(_get(server.url("/modified")))

    second = await dispatcher.dispatch(_get(server.url("/modified")))

    assert server.asked[1]["If-Modified-Since"] == "Sat, 28 Nov 2026 09:00:00 GMT"
    assert (second.not_modified, server.served) == (True, 1)


@pytest.mark.parametrize(("path", "key"), [("/etag", None), ("/plain", "endpoint-1")])
async def test_without_a_key_or_a_validator_every_call_is_whole(
    server: ValidatingServer, dispatcher: AiohttpDispatcher, path: str, key: str | None
) -> None:
    for _ in range(2):
        answer = await dispatcher.dispatch(_get(server.url(path), key))
        assert answer.not_modified is False

    assert "If-None-Match" not in server.asked[1]
    assert server.served == 2


async def test_each_endpoint_and_url_has_its_own_answer(
    server: ValidatingServer, dispatcher: AiohttpDispatcher
) -> None:
    await dispatcher.dispatch(_get(server.url("/etag"), "a"))

    await dispatcher.dispatch(_get(server.url("/etag"), "b"))
    await dispatcher.dispatch(_get(server.url("/etag?page=2"), "a"))

    assert [headers.get("If-None-Match") for headers in server.asked] == [None, None, None]


def test_the_kept_answers_stay_within_their_budget_least_recently_used_out() -> None:
    body = StoredBody(body={"x": "y" * 300}, text='{"x": "' + "y" * 300 + '"}')
    answers = ConfirmableAnswers(budget_bytes=1_100)
    for key in ("a", "b", "c"):
        answers.keep(key, "http://h/", 200, CIMultiDict(ETag='"1"'), body)
        answers.get("a", "http://h/")

    assert answers.get("a", "http://h/") is not None
    assert answers.get("b", "http://h/") is None
    assert answers.get("c", "http://h/") is not None
    off = ConfirmableAnswers(budget_bytes=0)
    off.keep("a", "http://h/", 200, CIMultiDict(ETag='"1"'), body)
    assert off.get("a", "http://h/") is None


async def _run_slot(store: Store, clock: FakeClock, dispatcher: AiohttpDispatcher) -> Run:
    clock.advance(60)
    [claim] = await store.claims.claim_due(clock.now(), "w1", LEASE_SECONDS, 1)
    response = await dispatcher.dispatch(request_for(claim))
    return await finish_one(store.claims, claim, "w1", response, clock.now())


async def test_a_confirmed_run_is_recorded_as_unchanged_in_every_store(
    store: Store, server: ValidatingServer, dispatcher: AiohttpDispatcher
) -> None:
    clock = FakeClock()
    # `served` changes with every whole answer: ignored, the comparison is of `version`.
    declared = spec("orders", url=server.url("/etag"), change_ignores=("served",))
    await apply_to_catalog(store.catalog, [declaration("shop", declared)], clock.now())

    first = await _run_slot(store, clock, dispatcher)
    second = await _run_slot(store, clock, dispatcher)
    server.version = 2
    third = await _run_slot(store, clock, dispatcher)

    endpoint = await store.catalog.get_endpoint("shop/orders")
    kept_third, kept_second, kept_first = await store.runs.list_runs(endpoint.id)
    ignored = ignored_fields(endpoint)
    assert (kept_second.not_modified, kept_second.status_code) == (True, 200)
    assert kept_second.body == kept_first.body == {"version": 1, "served": 1}
    assert comparable_hash(kept_second, ignored) == comparable_hash(kept_first, ignored)
    assert response_changed(kept_second, kept_first, ignored) is False
    assert response_changed(kept_third, kept_second, ignored) is True
    assert kept_first.not_modified is kept_third.not_modified is False
    assert (first.id, second.id, third.id) == (kept_first.id, kept_second.id, kept_third.id)
    assert server.served == 2
    assert run_view(kept_second, with_body=False)["not_modified"] is True


async def test_conditional_false_calls_whole(
    store: Store, server: ValidatingServer, dispatcher: AiohttpDispatcher
) -> None:
    clock = FakeClock()
    await apply_to_catalog(
        store.catalog,
        [declaration("shop", spec("orders", url=server.url("/etag"), conditional=False))],
        clock.now(),
    )

    for _ in range(2):
        await _run_slot(store, clock, dispatcher)

    assert server.served == 2
    assert (await store.catalog.get_endpoint("shop/orders")).spec.conditional is False
