"""Quiet windows through the API and the console: applied from a jobs document, shown on the
endpoint with the next window; a window that never ends is a 400 problem in one line."""

from __future__ import annotations

from cronpilot.domain.access.access import Scope
from tests.integration.api.conftest import Api
from tests.integration.api.test_api import _is_problem

JOBS = """
jobs:
  - name: shop
    endpoints:
      - name: stock
        url: https://example.com/stock
        interval: 60s
        quiet: [{days: [sat, sun]}, {dates: [2030-01-09], hours: "12:00-14:00", every: 30m}]
"""


async def test_an_endpoint_shows_its_windows_and_the_next_one(api: Api) -> None:
    async with api.client() as client:
        refused = _is_problem(
            await client.post("/apply", content=JOBS.replace("[sat, sun]", "mon-sun")), 400
        )
        applied = await client.post("/apply", content=JOBS)
        shown = (await client.get("/endpoints/shop/stock")).json()
    async with api.client(None) as browser:
        await browser.post("/console/login", data={"token": api.secrets[Scope.READ]})
        page = await browser.get("/console/endpoints/shop/stock")

    assert "field 'quiet': invalid schedule" in str(refused["detail"])
    assert "never ends" in str(refused["detail"])
    assert applied.status_code == 200, applied.text
    # The clock stands on Monday 7 January 2030 at noon: Wednesday's slowed lunch comes first.
    assert shown["next_quiet"] == {
        "start": "2030-01-09T12:00:00+00:00",
        "end": "2030-01-09T14:00:00+00:00",
        "in_force": False,
        "every_seconds": 1800.0,
    }
    assert [window["days"] for window in shown["quiet"]] == [[5, 6], []]
    assert 'id="quiet">sat,sun UTC; 2030-01-09 12:00-14:00 UTC; next: Wed 2030-01-09' in page.text
