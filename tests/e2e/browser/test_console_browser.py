"""The console as a person uses it, in headless Chromium (see conftest.py)."""

from __future__ import annotations

from typing import Any

import pytest

from cronpilot.adapters.jobs_file import example_jobs_file, load_declarations
from cronpilot.domain.access.access import Scope
from tests.support.browser import Tab, open_tab
from tests.support.console_server import Console
from tests.support.console_story import LOOPBACK, REVIEWED


def demo_refs() -> list[str]:
    declared = load_declarations(
        example_jobs_file(), LOOPBACK, {"SIMULATOR_URL": "http://127.0.0.1:1"}
    )
    return sorted(f"{d.job.name}/{e.name}" for d in declared for e in d.endpoints)


def open_graph(tab: Tab, path: str) -> None:
    """Signed in, `path` open and Cytoscape done drawing (`window.cy`, the graph page's)."""
    tab.sign_in(Scope.READ)
    tab.open(path)
    tab.page.wait_for_function("window.cy && window.cy.edges().length > 0")


def test_signing_in_with_a_token_shows_the_demo_s_endpoints(tab: Tab) -> None:
    tab.page.goto(f"{tab.console.url}/console/endpoints")
    assert "/console/login" in tab.page.url
    tab.sign_in(Scope.READ)
    shown = tab.page.locator("table.endpoints tbody tr td:first-child a").all_inner_texts()
    assert sorted(shown) == demo_refs()
    assert tab.errors == []


def test_an_endpoint_page_draws_its_timeline_with_a_dot_per_run(tab: Tab) -> None:
    tab.sign_in(Scope.READ)
    tab.page.get_by_role("link", name="health/eu", exact=True).click()
    tab.page.wait_for_url("**/console/endpoints/health/eu")
    dots = tab.page.locator("svg.timeline circle.dot")
    assert dots.count() > 5
    assert "source" in (dots.first.locator("title").text_content() or "")
    assert tab.page.locator("svg.timeline line.step").count() > 0
    # How often it changes, and what its interval keeps fresh, from the runs on the page.
    assert "keeps the copy fresh" in tab.page.locator("#changes").inner_text()
    assert tab.errors == []


def test_approving_a_proposal_puts_its_hint_in_force_on_the_endpoint_page(tab: Tab) -> None:
    tab.sign_in(Scope.ADMIN)
    tab.open("/console/endpoints/etl/fetch")
    assert "hint" not in tab.page.locator("#in-force").inner_text()
    tab.open("/console/proposals")
    row = tab.page.locator("table.proposals tr", has_text=REVIEWED)
    row.get_by_role("button", name=f"Approve the proposal for {REVIEWED}").click()
    tab.page.wait_for_url("**/console/proposals?note=approved")
    assert "Approved" in tab.page.get_by_role("status").inner_text()
    tab.page.get_by_label("Status").select_option("applied")
    tab.page.get_by_role("button", name="Filter").click()
    applied = tab.page.locator("table.proposals tr", has_text=REVIEWED).first
    assert "token:admin-viewer" in applied.inner_text()
    applied.get_by_role("link", name=REVIEWED).click()
    in_force = tab.page.locator("#in-force").inner_text()
    assert in_force.startswith("every 4s, planner hint until"), in_force
    assert tab.page.locator("svg.timeline rect.shade.hint").count() >= 1
    assert tab.errors == []


def test_an_admin_approves_the_run_a_dag_gate_waits_for(tab: Tab) -> None:
    tab.sign_in(Scope.ADMIN)
    tab.open("/console/proposals")
    gate = tab.page.locator("table.approvals tr", has_text="billing/cleanup")
    assert "pending" in gate.inner_text()
    gate.get_by_role("button", name="Approve the run of billing/cleanup").click()
    tab.page.wait_for_url("**/console/proposals?note=gate-approved")
    decided = tab.page.locator("table.approvals tr", has_text="billing/cleanup")
    assert "approved" in decided.inner_text() and "token:admin-viewer" in decided.inner_text()
    assert tab.errors == []


def test_the_graph_draws_each_edge_with_its_type_s_colour_and_its_source_s_line(tab: Tab) -> None:
    open_graph(tab, "/console/graph")
    drawn = tab.page.evaluate(
        """() => window.cy.edges().map(e => ({
            type: e.data('type'), origin: e.data('origin'), weight: e.data('weight'),
            line: e.style('line-style'), colour: e.style('line-color'),
            width: parseFloat(e.style('width'))}))"""
    )
    assert {e["type"] for e in drawn} >= {"contains", "dependency", "provides"}
    assert {e["origin"] for e in drawn} >= {"template", "inferred", "observed"}
    lines = {"observed": "solid", "inferred": "dashed", "template": "dotted"}
    assert all(e["line"] == lines[e["origin"]] for e in drawn), drawn
    colours: dict[str, set[str]] = {}
    for e in drawn:
        colours.setdefault(e["type"], set()).add(e["colour"])
    assert all(len(c) == 1 for c in colours.values()), colours
    assert len({c.pop() for c in colours.values()}) == len(colours)
    heaviest = max(drawn, key=lambda e: e["weight"])
    lightest = min(drawn, key=lambda e: e["weight"])
    assert heaviest["width"] > lightest["width"]
    assert tab.page.locator(".legend").is_visible()
    assert tab.errors == []


def test_clicking_a_node_opens_its_endpoint(tab: Tab) -> None:
    open_graph(tab, "/console/graph?job=etl")
    layers = tab.page.evaluate(
        "() => window.cy.nodes().filter(n => n.data('kind') === 'endpoint')"
        ".map(n => [n.id(), n.data('layer')])"
    )
    assert sorted(layers) == [["etl/fetch", 1], ["etl/load", 3], ["etl/transform", 2]]
    x, y = tab.page.evaluate(
        """() => {
            const at = window.cy.getElementById('etl/transform').renderedPosition();
            const box = window.cy.container().getBoundingClientRect();
            return [box.left + at.x, box.top + at.y];
        }"""
    )
    tab.page.mouse.click(x, y)
    tab.page.wait_for_url("**/console/endpoints/etl/transform")


PAGES = [
    "/console/endpoints",
    "/console/endpoints/health/eu",
    "/console/endpoints/billing/cleanup",
    "/console/runs",
    "/console/proposals?status=all",
    "/console/sessions",
    "/console/graph",
]


def test_every_page_opens_without_a_console_error(tab: Tab) -> None:
    tab.sign_in(Scope.ADMIN)
    for path in PAGES:
        tab.open(path)
    for link in ("table.runs td a", "table.sessions td a"):
        tab.open("/console/runs" if "runs" in link else "/console/sessions")
        tab.page.locator(link).first.click()
        tab.page.wait_for_load_state()
    assert tab.errors == []


@pytest.mark.parametrize("path", PAGES)
def test_a_phone_width_page_does_not_scroll_sideways(
    browser: Any, console: Console, path: str
) -> None:
    with open_tab(browser, console, 390, 844) as phone:
        phone.sign_in(Scope.READ)
        phone.open(path)
        overflow = phone.page.evaluate(
            "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 0
        assert phone.errors == []


def test_the_keyboard_reaches_the_navigation_with_a_visible_focus(tab: Tab) -> None:
    tab.sign_in(Scope.READ)
    tab.page.keyboard.press("Tab")
    assert tab.page.evaluate("() => document.activeElement.textContent") == "Skip to content"
    for _ in range(2):  # the brand, then the first of the navigation
        tab.page.keyboard.press("Tab")
    focused = tab.page.evaluate(
        "() => [document.activeElement.textContent,"
        " getComputedStyle(document.activeElement).outlineStyle]"
    )
    assert focused == ["Endpoints", "solid"]
    tab.page.keyboard.press("Enter")
    tab.page.wait_for_url("**/console/endpoints")


def test_signing_out_ends_the_session_for_a_copied_cookie_too(browser: Any, tab: Tab) -> None:
    tab.sign_in(Scope.READ)
    [cookie] = tab.page.context.cookies()
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert cookie["value"] != tab.console.secrets[Scope.READ]
    with open_tab(browser, tab.console) as copy:
        copy.page.context.add_cookies([cookie])
        copy.open("/console/endpoints")
        assert copy.page.url.endswith("/console/endpoints")
        tab.page.get_by_role("button", name="Sign out").click()
        tab.page.wait_for_url("**/console/login")
        copy.page.goto(f"{tab.console.url}/console/endpoints")
        assert "/console/login" in copy.page.url
