"""Pausing and resuming a whole job from its view, in headless Chromium (issue 25)."""

from __future__ import annotations

from cronpilot.domain.access.access import Scope
from tests.support.browser import Tab


def test_a_job_is_paused_and_resumed_from_its_view(tab: Tab) -> None:
    tab.sign_in(Scope.WRITE)
    tab.open("/console/endpoints?job=health")
    tab.page.get_by_label("Reason").fill("network upkeep")
    tab.page.get_by_role("button", name="Pause job").click()
    tab.page.wait_for_url("**/console/endpoints?job=health&note=job-paused")
    assert "Job paused" in tab.page.get_by_role("status").inner_text()
    assert "network upkeep" in tab.page.locator("#job-paused").inner_text()
    states = tab.page.locator("table.endpoints tbody tr td:nth-child(2)").all_inner_texts()
    assert states and set(states) == {"paused"}

    tab.page.get_by_role("button", name="Resume job").click()
    tab.page.wait_for_url("**/console/endpoints?job=health&note=job-resumed")
    assert tab.page.locator("#job-paused").count() == 0
    assert tab.errors == []
