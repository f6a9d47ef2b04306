"""The console read at the sizes people use (see conftest.py): the all-jobs graph at
1280 by 800 with every label readable, none cut off or covering another, and the endpoints table
on a phone keeping which endpoint, its next run and its last outcome in view."""

from __future__ import annotations

from typing import Any

from cronpilot.domain.access.access import Scope
from tests.e2e.browser.test_console_browser import demo_refs, open_graph
from tests.support.browser import Tab, open_tab
from tests.support.console_server import Console

READABLE_PX = 11.0
"""The smallest label size read without effort at a desk's distance."""
PHONE = (390, 844)

LABELS = """() => {
    const zoom = window.cy.zoom();
    const box = window.cy.container().getBoundingClientRect();
    return {
        width: box.width,
        height: box.height,
        labels: window.cy.nodes().filter(n => n.data('href')).map(n => {
            const b = n.renderedBoundingBox(
                {includeNodes: false, includeEdges: false, includeLabels: true});
            return {id: n.id(), px: parseFloat(n.style('font-size')) * zoom,
                    x1: b.x1, y1: b.y1, x2: b.x2, y2: b.y2};
        }),
    };
}"""


def _overlap(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a["x1"] < b["x2"] and b["x1"] < a["x2"] and a["y1"] < b["y2"] and b["y1"] < a["y2"]


def test_the_all_jobs_graph_reads_every_label_at_1280_by_800(tab: Tab) -> None:
    open_graph(tab, "/console/graph")
    drawn = tab.page.evaluate(LABELS)
    labels = drawn["labels"]
    jobs = {ref.split("/")[0] for ref in demo_refs()}
    assert {label["id"] for label in labels} >= set(demo_refs()) | jobs
    assert drawn["height"] <= 800
    small = [(label["id"], label["px"]) for label in labels if label["px"] < READABLE_PX]
    assert small == []
    cut = [
        label["id"]
        for label in labels
        if label["x1"] < 0
        or label["y1"] < 0
        or label["x2"] > drawn["width"]
        or label["y2"] > drawn["height"]
    ]
    assert cut == []
    covered = [
        (a["id"], b["id"]) for i, a in enumerate(labels) for b in labels[i + 1 :] if _overlap(a, b)
    ]
    assert covered == []
    boxes = tab.page.evaluate(
        "() => window.cy.nodes().filter(n => n.isParent()).map(n => n.children().length)"
    )
    assert len(boxes) == len(jobs)
    assert tab.errors == []


def test_a_phone_keeps_each_endpoint_s_ref_next_run_and_last_outcome_in_view(
    browser: Any, console: Console
) -> None:
    width, height = PHONE
    with open_tab(browser, console, width, height) as phone:
        phone.sign_in(Scope.READ)
        phone.open("/console/endpoints")
        rows = phone.page.locator("table.endpoints tbody tr")
        assert rows.count() == len(demo_refs())
        for index in range(rows.count()):
            row = rows.nth(index)
            for part in ("td:first-child a", "td.next", "td.last"):
                shown = row.locator(part)
                assert shown.is_visible(), (index, part)
                box = shown.bounding_box()
                assert box is not None
                assert box["x"] >= 0 and box["x"] + box["width"] <= width, (index, part, box)
            said = row.locator("td.last").evaluate("td => getComputedStyle(td, '::before').content")
            assert said == '"Last run: "'
            assert not row.locator("td.wide").first.is_visible()
        assert phone.errors == []


def test_a_desk_s_width_shows_every_column_of_the_endpoints_table(tab: Tab) -> None:
    tab.sign_in(Scope.READ)
    headers = tab.page.locator("table.endpoints thead th")
    assert [headers.nth(i).is_visible() for i in range(headers.count())] == [True] * 6
    assert headers.all_inner_texts() == [
        "Endpoint",
        "State",
        "In force",
        "Next run",
        "Source",
        "Last run",
    ]
