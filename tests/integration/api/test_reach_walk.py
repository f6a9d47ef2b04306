"""Every API route, console page and MCP tool, walked with a token limited to one job
(`tests/support/reach_world.py`) on SQLite and PostgreSQL: the routes and tools are read from
the app and the server themselves, so a new one is walked without a line here. Each parameter
(path, query, argument) is given values of many shapes: the other job's names and ids (whole,
as prefixes, in other cases, padded), our own, blank, repeated. No answer may hold a name or
id of the other job; an answer to one of them must be the answer to a name or id of the same
shape that nothing has (so ids reveal nothing); a blank or repeated query parameter is a 422.
"""

from __future__ import annotations

import html
import json
import random
import string
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from fastapi.routing import APIRoute
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult

from cronpilot.adapters.bootstrap import build_mcp
from cronpilot.adapters.console.app import PAGES
from cronpilot.adapters.wake import InProcessWaker
from cronpilot.adapters.web.app import ROUTES
from cronpilot.adapters.web.strict import declared_query
from cronpilot.domain.ports import SecretCipher
from tests.integration.api.conftest import Api, bearer, served_api
from tests.support.reach_world import ReachWorld, reach_world
from tests.support.settings import settings_for_tests

SAMPLED = 3
"""Values of the other job each parameter that names a job's things is walked with, drawn
anew on every run; another parameter (`limit`, `status`…) gets one."""
FREE_TEXT = {"q", "query"}
"""A search's words: its answer ranks by them, so it is compared with no twin's; what it
must not hold of the other job is still checked."""
NAMING = {"job", "endpoint", "name", "from", "to", "q", "query", "node", "token", "run"}
PLACE = "\u27c2"
"""What a probed value and its unknown twin are both replaced with before their answers are
compared."""
FILTERS = ("job", "endpoint")
"""Sent to every route and page besides what it declares: a page must not list another job
for a filter it ignores (and the API refuses one it does not declare)."""
NOT_WALKED = {"/console/login", "/console/logout"}
"""Signing in and out: no job data, and signing out would end the walk's session."""
BODIES: dict[str, Any] = {
    "reason": "walk",
    "node": "stock",
    "start": "2026-01-01T00:00:00Z",
    "end": "2026-01-01T01:00:00Z",
    "name": "walk-token",
    "scope": "read",
}
"""A value for each required body field of a write route, so that the write gets as far as
its reach."""


@dataclass(frozen=True)
class Value:
    """One value to give a parameter; `twin` is the value of the same shape that nothing has
    (None for a value that names nothing of the other job)."""

    sent: str | list[str]
    twin: str | list[str] | None = None

    @property
    def blank_or_repeated(self) -> bool:
        return isinstance(self.sent, list) or not self.sent.strip()


def _like(text: str, rng: random.Random) -> str:
    """A value of `text`'s length, case and alphabet (a digit for a digit, a hex digit for a
    hex digit in an id) that nothing has."""
    hexadecimal = text.strip().strip(string.hexdigits) == ""
    out = []
    for char in text:
        if char.isdigit():
            out.append(rng.choice(string.digits))
        elif char.isalpha():
            pick = rng.choice("abcdef" if hexadecimal else "qwz")
            out.append(pick.upper() if char.isupper() else pick)
        else:
            out.append(char)
    return "".join(out)


@dataclass
class Shapes:
    """The values a walk gives each kind of parameter."""

    world: ReachWorld
    rng: random.Random = field(default_factory=random.Random)

    def twin(self, text: str) -> str:
        """A value like `text` that no id starts with."""
        ids = [*self.world.own.ids, *self.world.foreign.ids]
        while True:
            made = _like(text, self.rng)
            if not any(i.startswith(made.strip().lower()) for i in ids):
                return made

    def foreign(self, texts: list[str]) -> list[Value]:
        """Each text as it is, in other cases and padded, each with its twin."""
        return [
            Value(variant, self.twin(variant))
            for text in texts
            for variant in sorted({text, text.upper(), text.title(), f" {text}", f"{text}\t"})
        ]

    def ids(self) -> list[Value]:
        """The other job's ids, as they are, in other cases, and as prefixes of 4 and 8."""
        found = self.foreign(self.world.foreign.ids)
        for each in self.world.foreign.ids:
            found += [Value(each[:n], self.twin(each[:n])) for n in (4, 8)]
        return found

    def refs(self) -> list[Value]:
        job, first, second = self.world.foreign.names
        own = self.world.own.job
        return self.foreign([f"{job}/{first}", f"{job}/{second}", f"{own}/{second}"])

    def shapes(self, own: str) -> list[Value]:
        """Our own value, blank, and repeated with a blank or the other job's name."""
        other, blank = self.world.foreign.job, self.rng.choice(["", " ", "\t"])
        return [Value(own), Value(blank), Value([own, ""]), Value([own, other])]

    def of(self, name: str, own: str, many: int = SAMPLED) -> list[Value]:
        """The values a parameter called `name`, whose own value is `own`, is walked with:
        the shapes, and `many` of the other job's names or ids drawn from those it could
        take (the whole other job's ids are walked in other parameters and other runs)."""
        if name.endswith("_id") or name == "run":
            pool = self.ids()
        elif name in ("job", "name", "node", "token", "from"):
            pool = self.foreign(self.world.foreign.names) + self.refs()
        else:
            pool = self.refs() + self.foreign(self.world.foreign.names) + self.ids()
        return self.shapes(own) + self.rng.sample(pool, min(many, len(pool)))


def own_values(world: ReachWorld) -> dict[str, str]:
    """The value each known parameter takes when another is walked: ours."""
    own = world.own
    return {
        "job": own.job,
        "name": own.endpoints[0].split("/")[1],
        "endpoint": own.endpoints[0],
        "run_id": own.run,
        "run": own.run,
        "proposal_id": own.proposal,
        "session_id": own.session,
        "approval_id": own.approval,
        "notification_id": own.failed,
        "token": "walker",
        "q": "figures",
        "query": "figures",
        "expr": "@daily",
        "from": own.job,
        "to": own.endpoints[0],
        "node": own.endpoints[1].split("/")[1],
        "reason": "walk",
    }


def _replaced(text: str, sent: str, by: str) -> str:
    """`text` with `sent` replaced as an answer may echo it: as it is, on one line (a tab a
    space), or as Python writes it (`repr`); in JSON or in HTML."""
    written = {sent, sent.replace("\t", " "), repr(sent)[1:-1]}
    forms = {f for w in written for f in (w, json.dumps(w)[1:-1], html.escape(w))}
    for form in sorted(forms, key=len, reverse=True):
        text = text.replace(form, by)
    return text


@dataclass
class Findings:
    """What a walk found wrong, each with the request that showed it."""

    problems: list[str] = field(default_factory=list)
    asked: int = 0
    seed: int = field(default_factory=lambda: random.randrange(2**32))
    """Of the values drawn: `Shapes(world, random.Random(seed))` draws them again."""

    def report(self) -> str:
        return f"seed {self.seed}:\n" + "\n".join(self.problems[:40])

    def check(self, world: ReachWorld, what: str, value: Value, status: int, text: str) -> None:
        self.asked += 1
        if status >= 500:
            self.problems.append(f"{what}: {status}")
        shown = text
        for sent in [value.sent] if isinstance(value.sent, str) else value.sent:
            if sent.strip():
                shown = _replaced(shown, sent, "")
        lowered = shown.lower()
        for marker in world.markers:
            if marker.lower() in lowered:
                self.problems.append(f"{what}: answer names {marker!r}: {text[:300]}")

    def compare(
        self, what: str, value: Value, first: tuple[int, str], twin: tuple[int, str]
    ) -> None:
        """The answer to a value of the other job must be the answer to its unknown twin."""
        assert isinstance(value.sent, str) and isinstance(value.twin, str)
        seen = (first[0], _replaced(first[1], value.sent, PLACE))
        unknown = (twin[0], _replaced(twin[1], value.twin, PLACE))
        if seen != unknown:
            self.problems.append(f"{what}: answers {seen} but for {value.twin!r} {unknown}")


def _routes(console: bool) -> Iterator[APIRoute]:
    """The console's pages, or the API's routes but the probes (open to anyone, no token)."""
    for module in PAGES if console else ROUTES:
        for route in module.router.routes:
            assert isinstance(route, APIRoute)
            if route.path not in NOT_WALKED and (console or route.include_in_schema):
                yield route


def _required_query(route: APIRoute) -> set[str]:
    return {f.alias for f in route.dependant.query_params if f.field_info.is_required()}


def _probes(
    route: APIRoute, world: ReachWorld, shapes: Shapes, console: bool
) -> Iterator[tuple[str, list[tuple[str, str]], Value, str]]:
    """(path, query, value walked, where) for every value of every parameter of `route`."""
    own = own_values(world)
    path_names = [p.name for p in route.dependant.path_params]
    query_names = sorted(declared_query(route) | set(FILTERS))
    required = _required_query(route)
    writes = not route.methods & {"GET"}

    def path_with(overrides: dict[str, str]) -> str:
        path = route.path
        for name in path_names:
            path = path.replace(f"{{{name}}}", quote(overrides.get(name, own[name]), safe=""))
        return path

    base_query = [(name, own[name]) for name in sorted(required)]
    for name in path_names:
        for value in shapes.of(name, own[name]):
            if isinstance(value.sent, list) or not value.sent.strip():
                continue
            if writes and value.twin is None:
                continue  # our own: the write would be made
            yield path_with({name: value.sent}), base_query, value, f"path:{name}"
    if writes:
        for name in query_names:
            for value in shapes.shapes(own.get(name, world.own.job))[1:]:
                yield path_with({}), _query(base_query, name, value.sent), value, f"query:{name}"
        return
    declared = declared_query(route)
    for name in query_names:
        # The API refuses a parameter a route does not declare, whatever its value.
        many = SAMPLED if name in NAMING and (console or name in declared) else 1
        for value in shapes.of(name, own.get(name, world.own.job), many):
            yield path_with({}), _query(base_query, name, value.sent), value, f"query:{name}"


def _names(where: str) -> bool:
    """Whether the parameter walked names a thing, so that another job's value must answer as
    an unknown one does. A time or a count (`since`, `limit`) parses the two shapes apart on
    their own: `2e95`, a hex id prefix, reads as a number where its twin `0c51` does not."""
    kind, name = where.split(":", 1)
    return kind == "path" or name in NAMING or name.endswith("_id")


def _query(base: list[tuple[str, str]], name: str, sent: str | list[str]) -> list[tuple[str, str]]:
    kept = [(k, v) for k, v in base if k != name]
    return kept + [(name, v) for v in ([sent] if isinstance(sent, str) else sent)]


def _twin_request(
    path: str, query: list[tuple[str, str]], value: Value, where: str
) -> tuple[str, list[tuple[str, str]]]:
    assert isinstance(value.sent, str) and isinstance(value.twin, str)
    if where.startswith("path:"):
        return path.replace(quote(value.sent, safe=""), quote(value.twin, safe="")), query
    name = where.split(":", 1)[1]
    return path, [(k, value.twin if (k == name and v == value.sent) else v) for k, v in query]


def _body(route: APIRoute, console: bool, csrf: str) -> dict[str, Any]:
    if console:
        return {"data": {"csrf": csrf, "reason": "walk"}}
    if route.body_field is None:
        return {}
    model = route.body_field.field_info.annotation
    fields = getattr(model, "model_fields", {})
    return {"json": {n: BODIES[n] for n, f in fields.items() if f.is_required()}}


async def _ask(
    client: httpx.AsyncClient,
    method: str,
    path: str,
    query: list[tuple[str, str]],
    body: dict[str, Any],
) -> tuple[int, str]:
    answer = await client.request(method, path, params=query, **body)
    return answer.status_code, answer.text


async def _walk_http(
    client: httpx.AsyncClient, world: ReachWorld, console: bool, csrf: str = ""
) -> Findings:
    found = Findings()
    shapes = Shapes(world, random.Random(found.seed))
    for route in _routes(console):
        method = sorted(route.methods)[0]
        body = _body(route, console, csrf)
        for path, query, value, where in _probes(route, world, shapes, console):
            what = f"{method} {path}?{query}"
            status, text = await _ask(client, method, path, query, body)
            found.check(world, what, value, status, text)
            if value.blank_or_repeated and where.startswith("query:") and status != 422:
                found.problems.append(f"{what}: {status}, not 422")
            free = where.split(":", 1)[1] in FREE_TEXT
            if (
                value.twin is not None
                and not value.blank_or_repeated
                and not free
                and (_names(where))
            ):
                twin_path, twin_query = _twin_request(path, query, value, where)
                twin = await _ask(client, method, twin_path, twin_query, body)
                found.compare(what, value, (status, text), twin)
    return found


@pytest.fixture
async def walked(sql_url: str, cipher: SecretCipher) -> AsyncIterator[tuple[Api, ReachWorld]]:
    async with served_api(sql_url, cipher) as api:
        world = await reach_world(api.store, api.clock.now())
        yield api, world


async def test_no_api_route_shows_a_limited_token_anything_of_another_job(
    walked: tuple[Api, ReachWorld],
) -> None:
    api, world = walked
    async with httpx.AsyncClient(
        base_url=api.url, headers=bearer(world.secret), timeout=30
    ) as client:
        found = await _walk_http(client, world, console=False)
    assert found.problems == [], found.report()
    assert found.asked > 400


async def test_no_console_page_shows_a_limited_token_anything_of_another_job(
    walked: tuple[Api, ReachWorld],
) -> None:
    api, world = walked
    async with httpx.AsyncClient(base_url=api.url, timeout=30) as client:
        signed = await client.post(
            "/console/login", data={"token": world.secret}, headers={"Origin": api.url}
        )
        assert signed.status_code == 303, signed.text
        page = await client.get("/console/endpoints")
        csrf = page.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        found = await _walk_http(client, world, console=True, csrf=csrf)
        home = await client.get("/console/", follow_redirects=True)
        graph = await client.get("/console/graph")
    assert found.problems == [], found.report()
    assert found.asked > 200
    assert home.status_code == graph.status_code == 200
    assert f"<option>{world.own.job}</option>" in home.text


async def _call(server: MCPServer[Any], tool: str, arguments: dict[str, str]) -> tuple[int, str]:
    """Whether the call failed (1) or not (0), and its whole answer as JSON."""
    result = await server.call_tool(tool, arguments)
    assert isinstance(result, CallToolResult)
    return int(bool(result.is_error)), result.model_dump_json()


async def test_no_mcp_tool_shows_a_limited_token_anything_of_another_job(
    walked: tuple[Api, ReachWorld],
) -> None:
    api, world = walked
    waker = InProcessWaker()
    settings = settings_for_tests(database_url="sqlite://")
    server = await build_mcp(settings, api.store, waker, api.clock, world.secret)
    found, own = Findings(), own_values(world)
    shapes = Shapes(world, random.Random(found.seed))
    try:
        for tool in await server.list_tools():
            properties = tool.input_schema.get("properties", {})
            required = set(tool.input_schema.get("required", []))
            writes = not (tool.annotations and tool.annotations.read_only_hint)
            base = {name: own[name] for name in required if name != "document"}
            if "document" in required:
                base["document"] = "jobs: []"
            for name in properties:
                if name not in own or name in ("reason",):
                    continue
                for value in shapes.of(name, own[name]):
                    if isinstance(value.sent, list) or (writes and value.twin is None):
                        continue
                    what = f"{tool.name}({name}={value.sent!r})"

                    answer = await _call(server, tool.name, {**base, name: value.sent})
                    found.check(world, what, value, 0, answer[1])
                    if not value.sent.strip() and not answer[0]:
                        found.problems.append(f"{what}: a blank argument was taken")
                    if value.twin is not None and name not in FREE_TEXT:
                        assert isinstance(value.twin, str)
                        twin = await _call(server, tool.name, {**base, name: value.twin})
                        found.compare(what, value, answer, twin)
        jobs = await server.call_tool("list_jobs", {})
    finally:
        await waker.close()
    assert found.problems == [], found.report()
    assert found.asked > 100
    assert isinstance(jobs, CallToolResult) and jobs.structured_content is not None
    assert [j["name"] for j in jobs.structured_content["items"]] == [world.own.job]
