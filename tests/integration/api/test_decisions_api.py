"""What the API shows and guards of the decisions it takes: an endpoint's rules and whether it
is dangerous, a dry run of `/apply` and `If-Match` on it, jobs and endpoints a page at a time,
floats as the CLI prints them, and docs that need no network."""

from __future__ import annotations

import re
from datetime import timedelta
from http import HTTPStatus

from cronpilot.domain.model import IntervalHint
from tests.integration.api.conftest import JOBS, Api
from tests.support.scheduling import set_hints

RULED = """
jobs:
  - name: queue
    endpoints:
      - {name: depth, url: "https://example.com/depth", interval: 5s}
      - name: processor
        url: https://example.com/process
        interval: 10s
        min_interval: 3s
        dangerous: true
        rules:
          - {when: 'depth.body.pending > 200', then: {interval: 3s, ttl: 10m}}
"""
MORE = """
  - name: other
    endpoints:
      - {name: a, url: "https://example.com/a", interval: 60s}
"""


async def test_an_endpoint_shows_its_rules_and_whether_it_is_dangerous(api: Api) -> None:
    async with api.client() as client:
        assert (await client.post("/apply", content=RULED)).status_code == HTTPStatus.OK
        processor = (await client.get("/endpoints/queue/processor")).json()
        depth = (await client.get("/endpoints/queue/depth")).json()

    assert processor["dangerous"] is True
    [rule] = processor["rules"]
    assert rule["when"] == "depth.body.pending > 200"
    assert (rule["then"]["kind"], rule["then"]["interval_seconds"]) == ("interval", 3)
    assert rule["then"]["ttl_seconds"] == 600
    assert (depth["dangerous"], depth["rules"]) == (False, [])


async def test_a_dry_run_writes_nothing_and_its_etag_guards_the_apply(api: Api) -> None:
    async with api.client() as client:
        await client.post("/apply", content=JOBS)
        edited = JOBS.replace("interval: 60s", "interval: 30s")

        dry = await client.post("/apply", params={"dry_run": "true"}, content=edited)
        stock = (await client.get("/endpoints/shop/stock")).json()
        assert dry.status_code == HTTPStatus.OK, dry.text
        assert dry.json()["dry_run"] is True
        changes = {c["ref"]: c for c in dry.json()["changes"]}
        assert changes["shop/stock"]["outcome"] == "update"
        assert stock["schedule"]["interval_seconds"] == 60
        tag = dry.headers["etag"]
        # The same dry run again: nothing changed, the same tag.
        again = await client.post("/apply", params={"dry_run": "true"}, content=edited)
        assert again.headers["etag"] == tag

        # Someone else applies another change to the job meanwhile: the preview is stale.
        await client.post("/apply", content=JOBS.replace("the shop", "the shop, renamed"))
        stale = await client.post("/apply", content=edited, headers={"If-Match": tag})
        assert stale.status_code == HTTPStatus.PRECONDITION_FAILED, stale.text
        assert stale.json()["detail"] == (
            "shop has changed since it was read; read it again and retry"
        )
        assert (await client.get("/endpoints/shop/stock")).json()["schedule"][
            "interval_seconds"
        ] == 60

        fresh = await client.post("/apply", params={"dry_run": "true"}, content=edited)
        applied = await client.post(
            "/apply", content=edited, headers={"If-Match": fresh.headers["etag"]}
        )
        assert applied.status_code == HTTPStatus.OK, applied.text
        assert applied.json()["updated"] == ["shop", "shop/stock"]


async def test_a_dry_run_of_a_new_job_goes_stale_once_the_job_is_made(api: Api) -> None:
    async with api.client() as client:
        dry = await client.post("/apply", params={"dry_run": "true"}, content=JOBS)
        assert [c["outcome"] for c in dry.json()["changes"]] == ["create"] * 3
        assert (await client.get("/jobs")).json()["items"] == []
        await client.post("/apply", content=JOBS)

        late = await client.post("/apply", content=JOBS, headers={"If-Match": dry.headers["etag"]})

    assert late.status_code == HTTPStatus.PRECONDITION_FAILED


async def test_endpoints_and_jobs_come_a_page_at_a_time(api: Api) -> None:
    async with api.client() as client:
        await client.post("/apply", content=JOBS + MORE.replace("\n  - name", "\n  - name", 1))
        await client.post("/apply", content=RULED)
        refs, cursor = [], None
        while True:
            params = {"limit": "2"} | ({"cursor": cursor} if cursor else {})
            page = (await client.get("/endpoints", params=params)).json()
            assert len(page["items"]) <= 2
            refs += [item["ref"] for item in page["items"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        jobs = await client.get("/jobs", params={"limit": "1"})
        second = await client.get(
            "/jobs", params={"limit": "1", "cursor": jobs.json()["next_cursor"]}
        )
        one_job = await client.get("/endpoints", params={"job": "shop", "limit": "1"})
        bad = await client.get("/endpoints", params={"cursor": "nonsense"})
        # A job's cursor names one part, an endpoint's two: not interchangeable.
        crossed = await client.get("/endpoints", params={"cursor": jobs.json()["next_cursor"]})

    assert refs == [
        "other/a",
        "queue/depth",
        "queue/processor",
        "shop/prices",
        "shop/stock",
    ]
    assert [j["name"] for j in jobs.json()["items"]] == ["other"]
    assert [j["name"] for j in second.json()["items"]] == ["queue"]
    assert [e["ref"] for e in one_job.json()["items"]] == ["shop/prices"]
    assert one_job.json()["next_cursor"] is not None
    assert (bad.status_code, crossed.status_code) == (HTTPStatus.BAD_REQUEST,) * 2


async def test_floats_are_rounded_as_the_cli_rounds_them(api: Api) -> None:
    async with api.client() as client:
        await client.post("/apply", content=JOBS)
        stock = await api.store.catalog.get_endpoint("shop/stock")
        noisy = 1.3439999999999999  # the neighbour of 1.344, as arithmetic leaves it
        assert repr(noisy) != repr(1.344)
        until = api.clock.now() + timedelta(hours=1)
        await set_hints(
            api.store.catalog, stock.id, IntervalHint(noisy, until, "noise"), None, api.clock.now()
        )
        shown = await client.get("/endpoints/shop/stock")

    assert '"interval_seconds":1.344' in shown.text
    assert repr(noisy) not in shown.text


async def test_docs_load_every_asset_from_the_server_itself(api: Api) -> None:
    async with api.client(None) as anyone:
        docs = await anyone.get("/docs")
        assets = re.findall(r"""(?:src|href)=["']([^"']+)["']""", docs.text)
        assert docs.status_code == HTTPStatus.OK
        # No address elsewhere at all: not a CDN's, not the validator's.
        assert "://" not in docs.text
        assert '"validatorUrl": null' in docs.text
        served = {url: await anyone.get(url) for url in assets}

    assert {url.rsplit("/", 1)[-1] for url in assets} == {
        "swagger-ui.css",
        "swagger-ui-bundle.js",
        "favicon.svg",
    }
    assert all(url.startswith("/") and not url.startswith("//") for url in assets)
    assert {url: r.status_code for url, r in served.items()} == dict.fromkeys(assets, 200)
    assert len(served[next(u for u in assets if u.endswith(".js"))].content) > 100_000


BUDGETED = """
jobs:
  - name: feeds
    budget: 600/h
    endpoints:
      - {name: news, url: "https://example.com/news", interval: 10s, objective: age}
      - {name: prices, url: "https://example.com/prices", interval: 10s, max_interval: 1h}
"""


async def test_a_jobs_budget_and_an_endpoints_objective_show_and_a_short_budget_is_refused(
    api: Api,
) -> None:
    async with api.client() as client:
        assert (await client.post("/apply", content=BUDGETED)).status_code == HTTPStatus.OK
        job = (await client.get("/jobs/feeds")).json()
        news = (await client.get("/endpoints/feeds/news")).json()
        prices = (await client.get("/endpoints/feeds/prices")).json()
        # `news` has no max_interval: it is called every 10 s at least, 360/h.
        short = await client.post("/apply", content=BUDGETED.replace("600/h", "300/h"))

    assert job["budget"] == "600/h"
    assert (news["objective"], prices["objective"]) == ("age", "freshness")
    assert short.status_code == HTTPStatus.BAD_REQUEST
    said = "field 'budget': budget 300/h is below the 361/h the endpoints' max_interval"
    assert said in short.json()["detail"]
