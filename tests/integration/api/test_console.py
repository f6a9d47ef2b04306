"""The web console over HTTP (its pages in a browser: tests/e2e/browser): signing in with a token
kept in a cookie, CSRF tokens on forms, scopes, the writes of its forms, errors as pages."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from cronpilot.adapters.bootstrap import build_api, token_authenticator
from cronpilot.adapters.jobs_file import parse_declarations
from cronpilot.adapters.wake import InProcessWaker
from cronpilot.domain.access.access import Scope
from cronpilot.domain.model import PlannerMode, RunStatus
from cronpilot.domain.planning.planning import ProposalDraft, ProposalKind, ProposalStatus
from cronpilot.usecases.access import list_audit, revoke_token
from cronpilot.usecases.declarations import apply_declarations
from cronpilot.usecases.proposals import ProposalDesk, Proposer
from cronpilot.usecases.queries.catalog import show_endpoint
from cronpilot.usecases.queries.planner import show_proposal
from cronpilot.usecases.queries.runs import RunQuery, page_runs
from tests.integration.api.conftest import JOBS, Secrets, issue_tokens
from tests.support.clock import FakeClock
from tests.support.memory_store import MemoryStore
from tests.support.settings import limits_for_tests, settings_for_tests
from tests.support.superseding import supersede

CONSOLE = Path(__file__).resolve().parents[3] / "adapters" / "console"
CSRF = re.compile(r'name="csrf" value="([0-9a-f]+)"')


@dataclass
class Console:
    app: object
    store: MemoryStore
    clock: FakeClock
    secrets: Secrets

    def client(self, base_url: str = "http://console.test") -> httpx.AsyncClient:
        transport = httpx.ASGITransport(app=self.app)  # type: ignore[arg-type]
        return httpx.AsyncClient(transport=transport, base_url=base_url)

    @asynccontextmanager
    async def signed_in(self, scope: Scope) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
        """A client holding the session cookie of `scope`'s token, and its CSRF token."""
        async with self.client() as client:
            await client.post("/console/login", data={"token": self.secrets[scope]})
            page = await client.get("/console/endpoints/shop/stock")
            found = CSRF.search(page.text)
            assert found is not None, page.text
            yield client, found.group(1)


@pytest.fixture
async def console() -> AsyncIterator[Console]:
    store, clock, waker = MemoryStore(), FakeClock(), InProcessWaker()
    secrets = await issue_tokens(store, clock)
    declarations = parse_declarations(JOBS, "jobs.yaml", [], {})
    await apply_declarations(
        store.unit_of_work, None, declarations, "jobs.yaml", actor="cli:t@h", now=clock.now()
    )
    app = build_api(settings_for_tests(), store, waker, clock, token_authenticator(store, clock))
    try:
        yield Console(app, store, clock, secrets)
    finally:
        await waker.close()


async def test_a_page_without_a_session_sends_to_the_login_form(console: Console) -> None:
    async with console.client() as client:
        page = await client.get("/console/runs")
    assert page.status_code == 303
    assert page.headers["location"] == "/console/login?next=/console/runs"


@pytest.mark.parametrize(
    ("base", "secure"), [("http://console.test", False), ("https://c.test", True)]
)
async def test_signing_in_keeps_the_token_in_an_http_only_strict_cookie(
    console: Console, base: str, secure: bool
) -> None:
    async with console.client(base) as client:
        signed = await client.post(
            "/console/login",
            data={"token": console.secrets[Scope.READ], "next": "/console/graph"},
        )
    assert signed.status_code == 303 and signed.headers["location"] == "/console/graph"
    cookie = signed.headers["set-cookie"].lower()
    assert cookie.startswith("cronpilot_console=")
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/console" in cookie
    assert ("secure" in cookie.split("; ")) is secure


async def test_a_wrong_token_gets_the_form_again_and_no_cookie(console: Console) -> None:
    async with console.client() as client:
        refused = await client.post("/console/login", data={"token": "cp_nope"})
    assert refused.status_code == 401
    assert "set-cookie" not in refused.headers
    assert "unknown or revoked" in refused.text


@pytest.mark.parametrize("wanted", ["https://elsewhere.example/", "//elsewhere.example/x", "/docs"])
async def test_signing_in_leads_only_to_a_console_page(console: Console, wanted: str) -> None:
    async with console.client() as client:
        signed = await client.post(
            "/console/login", data={"token": console.secrets[Scope.READ], "next": wanted}
        )
    assert signed.headers["location"] == "/console/endpoints"


async def test_a_revoked_token_ends_its_session(console: Console) -> None:
    async with console.signed_in(Scope.READ) as (client, _):
        assert (await client.get("/console/endpoints")).status_code == 200
        await revoke_token(console.store.unit_of_work, "read-bot", "cli:t@h", console.clock.now())
        assert (await client.get("/console/endpoints")).status_code == 303


async def test_signing_out_forgets_the_cookie(console: Console) -> None:
    async with console.signed_in(Scope.READ) as (client, csrf):
        out = await client.post("/console/logout", data={"csrf": csrf})
        assert out.status_code == 303 and out.headers["location"] == "/console/login"
        assert (await client.get("/console/endpoints")).status_code == 303


async def test_pause_resume_and_run_now_act_as_the_token(console: Console) -> None:
    async with console.signed_in(Scope.WRITE) as (client, csrf):
        paused = await client.post(
            "/console/endpoints/shop/stock/pause",
            data={"csrf": csrf, "reason": "  deploy   window ", "minutes": "30"},
        )
        assert paused.headers["location"] == "/console/endpoints/shop/stock?note=paused"
        state = await show_endpoint(console.store.reading, "shop/stock")
        assert state.endpoint.pause is not None and state.endpoint.pause.reason == "deploy window"
        assert state.endpoint.pause.by == "token:write-bot"
        shown = await client.get(paused.headers["location"])
        assert "Paused." in shown.text and ">Resume</button>" in shown.text
        await client.post("/console/endpoints/shop/stock/resume", data={"csrf": csrf})
        assert (await show_endpoint(console.store.reading, "shop/stock")).endpoint.pause is None
        queued = await client.post("/console/endpoints/shop/stock/run", data={"csrf": csrf})
        assert queued.headers["location"].endswith("?note=queued")
    runs = await page_runs(console.store.reading, RunQuery(endpoint="shop/stock"), 10)
    assert [(r.status, r.requested_by) for r in runs.items] == [
        (RunStatus.QUEUED, "token:write-bot")
    ]
    audit = await list_audit(console.store.reading, actor="token:write-bot")
    assert sorted(e.action for e in audit) == ["pause", "resume", "run_now"]


async def test_a_form_without_the_session_s_csrf_token_is_refused(console: Console) -> None:
    async with console.signed_in(Scope.WRITE) as (client, csrf):
        for forged in ({"reason": "x"}, {"reason": "x", "csrf": "0" * len(csrf)}):
            refused = await client.post("/console/endpoints/shop/stock/pause", data=forged)
            assert refused.status_code == 403
            assert "did not come from this console" in refused.text
    assert (await show_endpoint(console.store.reading, "shop/stock")).endpoint.pause is None


async def test_a_read_token_sees_no_button_and_cannot_write(console: Console) -> None:
    async with console.signed_in(Scope.READ) as (client, csrf):
        page = await client.get("/console/endpoints/shop/stock")
        assert "Run now" not in page.text and ">Pause</button>" not in page.text
        refused = await client.post("/console/endpoints/shop/stock/run", data={"csrf": csrf})
    assert refused.status_code == 403
    assert "token:read-bot has scope read; this needs write" in refused.text


async def test_a_pause_needs_a_reason(console: Console) -> None:
    async with console.signed_in(Scope.WRITE) as (client, csrf):
        refused = await client.post(
            "/console/endpoints/shop/stock/pause", data={"csrf": csrf, "reason": "   "}
        )
    assert refused.status_code == 400 and "reason" in refused.text


async def test_a_pause_of_more_than_ten_years_is_bad_input(console: Console) -> None:
    async with console.signed_in(Scope.WRITE) as (client, csrf):
        refused = await client.post(
            "/console/endpoints/shop/stock/pause",
            data={"csrf": csrf, "reason": "long", "minutes": "99999999999"},
        )
    assert refused.status_code == 400
    assert "minutes: is more than ten years ahead" in refused.text
    assert (await show_endpoint(console.store.reading, "shop/stock")).endpoint.pause is None


async def _pending(console: Console) -> str:
    stock = await show_endpoint(console.store.reading, "shop/stock")
    desk = ProposalDesk(console.store.unit_of_work, console.store.reading, None, limits_for_tests())
    draft = ProposalDraft(ProposalKind.INTERVAL, "calm", interval_seconds=120, ttl_seconds=600)
    proposal = await desk.propose(
        draft, stock.endpoint.id, Proposer("heuristic", PlannerMode.REVIEW), console.clock.now()
    )
    return proposal.id


async def test_rejecting_a_proposal_needs_a_reason_and_an_admin(console: Console) -> None:
    proposal = await _pending(console)
    async with console.signed_in(Scope.WRITE) as (writer, write_csrf):
        refused = await writer.post(
            f"/console/proposals/{proposal}/approve", data={"csrf": write_csrf}
        )
        assert refused.status_code == 403
    async with console.signed_in(Scope.ADMIN) as (admin, csrf):
        queue = await admin.get("/console/proposals")
        assert f"/console/proposals/{proposal}/reject" in queue.text
        assert "<td>graded</td><td" in queue.text and ">0.92</td>" in queue.text
        bare = await admin.post(f"/console/proposals/{proposal}/reject", data={"csrf": csrf})
        assert bare.status_code == 400
        assert (await show_proposal(console.store.reading, proposal)).status is (
            ProposalStatus.PENDING
        )
        done = await admin.post(
            f"/console/proposals/{proposal}/reject", data={"csrf": csrf, "reason": "too slow"}
        )
        assert done.headers["location"] == "/console/proposals?note=rejected"
    decided = await show_proposal(console.store.reading, proposal)
    assert (decided.status, decided.decided_by, decided.outcome) == (
        ProposalStatus.REJECTED,
        "token:admin-bot",
        "too slow",
    )


async def test_approving_a_proposal_puts_its_hint_in_force(console: Console) -> None:
    proposal = await _pending(console)
    async with console.signed_in(Scope.ADMIN) as (admin, csrf):
        done = await admin.post(f"/console/proposals/{proposal}/approve", data={"csrf": csrf})
        assert done.headers["location"] == "/console/proposals?note=approved"
        page = await admin.get("/console/endpoints/shop/stock")
    assert re.search(r'id="in-force">every 2m, planner hint until', page.text)


async def test_the_endpoint_page_says_its_rules_whether_dangerous_and_who_paused(
    console: Console,
) -> None:
    ruled = JOBS.replace(
        "        interval: 60s\n",
        "        interval: 60s\n        dangerous: true\n"
        "        rules:\n          - {when: 'true', then: {interval: 2m}}\n",
        1,
    )
    declarations = parse_declarations(ruled, "jobs.yaml", [], {})
    now = console.clock.now()
    await apply_declarations(
        console.store.unit_of_work, None, declarations, "jobs.yaml", actor="cli:t@h", now=now
    )
    stock = await show_endpoint(console.store.reading, "shop/stock")
    desk = ProposalDesk(console.store.unit_of_work, console.store.reading, None, limits_for_tests())
    draft = ProposalDraft(ProposalKind.PAUSE, "quiet hours", at=now + timedelta(minutes=30))
    await desk.propose(draft, stock.endpoint.id, Proposer("heuristic", PlannerMode.AUTO), now)

    async with console.signed_in(Scope.READ) as (client, _):
        stock_page = await client.get("/console/endpoints/shop/stock")
        prices_page = await client.get("/console/endpoints/shop/prices")

    assert re.search(r'id="dangerous">yes: ', stock_page.text)
    assert "<li>when true then interval 120s</li>" in stock_page.text
    assert re.search(
        r"<dt>Paused</dt><dd>until [^<]+ by planner:heuristic: quiet hours", stock_page.text
    )
    assert 'id="dangerous">no</dd>' in prices_page.text
    assert 'id="rules">none</dd>' in prices_page.text


async def test_a_superseded_proposal_cannot_be_approved_and_points_to_the_newer(
    console: Console,
) -> None:
    older = await _pending(console)
    newer = await supersede(console.store, older, console.clock.now())
    async with console.signed_in(Scope.ADMIN) as (admin, csrf):
        queue = await admin.get("/console/proposals", params={"status": "superseded"})
        refused = await admin.post(f"/console/proposals/{older}/approve", data={"csrf": csrf})

    assert f'id="proposal-{older}"' in queue.text
    assert f'href="#proposal-{newer.id}"' in queue.text
    assert refused.status_code == 409
    assert f"proposal {older} is superseded by proposal {newer.id}, not pending" in refused.text
    assert (await show_proposal(console.store.reading, older)).status is (ProposalStatus.SUPERSEDED)


async def test_failures_are_pages_with_their_status(console: Console) -> None:
    async with console.signed_in(Scope.READ) as (client, _):
        missing = await client.get("/console/endpoints/shop/nope")
        assert missing.status_code == 404 and "text/html" in missing.headers["content-type"]
        assert "shop/nope" in missing.text
        bad = await client.get("/console/endpoints?state=sleepy")
        assert bad.status_code == 400 and "one of paused, failing" in bad.text
        no_run = await client.get("/console/runs/nope")
        assert no_run.status_code == 404


async def test_the_endpoints_table_filters_by_job_and_state(console: Console) -> None:
    async with console.signed_in(Scope.WRITE) as (client, csrf):
        await client.post(
            "/console/endpoints/shop/stock/pause", data={"csrf": csrf, "reason": "quiet"}
        )
        paused = await client.get("/console/endpoints?state=paused&job=shop")
        every = await client.get("/console/endpoints")
        # The filter form leaves its empty fields out (filters.js): given, they are refused.
        blank = await client.get("/console/endpoints?state=&job=")
    listed = re.compile(r'<td><a href="/console/endpoints/([^"]+)">')
    assert listed.findall(paused.text) == ["shop/stock"]
    assert listed.findall(every.text) == ["shop/prices", "shop/stock"]
    assert blank.status_code == 422
    assert "query.job: empty" in blank.text and "query.state: empty" in blank.text


async def test_pages_carry_a_strict_content_security_policy(console: Console) -> None:
    async with console.signed_in(Scope.READ) as (client, _):
        for path in ("/console/endpoints", "/console/graph", "/console/login"):
            page = await client.get(path)
            policy = page.headers["content-security-policy"]
            assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
            assert page.headers["cache-control"] == "no-store"


async def test_every_asset_ships_with_the_package_and_no_page_loads_another_site(
    console: Console,
) -> None:
    async with console.client() as client:
        for asset in ("console.css", "graph.js", "vendor/cytoscape.min.js"):
            assert (await client.get(f"/console/static/{asset}")).status_code == 200
    assert "Copyright" in (CONSOLE / "static" / "vendor" / "cytoscape.LICENSE").read_text()
    remote = re.compile(r"""(src|href)=["']?(https?:)?//""", re.IGNORECASE)
    for template in (CONSOLE / "templates").glob("*.html"):
        assert remote.search(template.read_text()) is None, template.name


async def test_the_console_is_not_part_of_the_api_s_openapi_document(console: Console) -> None:
    async with console.client() as client:
        document = (await client.get("/openapi.json")).json()
    assert not [path for path in document["paths"] if path.startswith("/console")]
