"""The console as a person uses it, in headless Chromium (see conftest.py)."""

from __future__ import annotations

from cronpilot.adapters.jobs_file import example_jobs_file, load_declarations
from cronpilot.domain.access import Scope
from tests.support.browser import Tab
from tests.support.console_story import LOOPBACK


def demo_refs() -> list[str]:
    declared = load_declarations(
        example_jobs_file(), LOOPBACK, {"SIMULATOR_URL": "http://127.0.0.1:1"}
    )
    return sorted(f"{d.job.name}/{e.name}" for d in declared for e in d.endpoints)


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
    assert tab.errors == []
