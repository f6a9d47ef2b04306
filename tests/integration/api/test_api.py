"""The API through real HTTP on loopback, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta
from http import HTTPStatus

import yaml

from cronpilot.adapters.web.problems import status_of
from cronpilot.domain.access.access import Scope
from cronpilot.domain.errors import AmbiguousId
from cronpilot.domain.model import Pause, Response, new_id
from cronpilot.domain.planning.planning import Proposal, ProposalKind, ProposalStatus
from cronpilot.usecases.access import list_audit, revoke_token
from cronpilot.usecases.schema_learning import rebuild_schema
from tests.contract.builders import add_endpoint, run_once
from tests.integration.api.conftest import JOBS, Api
from tests.support.scheduling import set_pause
from tests.support.superseding import supersede

PROBLEM = "application/problem+json"


def _is_problem(response: object, status: int) -> dict[str, object]:
    assert response.status_code == status, response.text  # type: ignore[attr-defined]
    assert response.headers["content-type"] == PROBLEM  # type: ignore[attr-defined]
    body: dict[str, object] = response.json()  # type: ignore[attr-defined]
    assert {"type", "title", "status", "detail"} <= body.keys()
    assert body["status"] == status
    return body


async def test_no_token_or_an_unknown_one_is_401_with_a_challenge(api: Api) -> None:
    for client in (api.client(None), api.client(None)):
        async with client:
            response = await client.get("/jobs")
            _is_problem(response, 401)
            assert response.headers["www-authenticate"] == "Bearer"
    async with api.client(None) as client:
        response = await client.get("/jobs", headers={"Authorization": "Bearer nope"})
        _is_problem(response, 401)


async def test_each_scope_does_what_it_may_and_no_more(api: Api) -> None:
    async with api.client(Scope.READ) as reader:
        assert (await reader.get("/jobs")).status_code == 200
        refused = _is_problem(await reader.post("/apply", content=JOBS), 403)
        assert "token:read-bot" in str(refused["detail"])
    async with api.client(Scope.WRITE) as writer:
        assert (await writer.post("/apply", content=JOBS)).status_code == 200
        _is_problem(await writer.post("/proposals/x/approve"), 403)
    async with api.client(Scope.ADMIN) as admin:
        _is_problem(await admin.post("/proposals/x/approve"), 404)


async def test_apply_reports_and_an_invalid_document_changes_nothing(api: Api) -> None:
    async with api.client() as client:
        applied = await client.post("/apply", content=JOBS)
        assert applied.json()["created"] == ["shop", "shop/stock", "shop/prices"]
        # The same document as JSON changes nothing.
        as_json = await client.post("/apply", json=yaml.safe_load(JOBS))
        assert as_json.json()["unchanged"] == ["shop", "shop/stock", "shop/prices"]
        # A valid new job beside an invalid one: neither is applied.
        bad = (
            JOBS
            + """
  - name: other
    endpoints:
      - name: fine
        url: https://example.com/fine
        interval: 60s
  - name: broken
    endpoints:
      - name: e
        url: ftp://example.com/x
        interval: 60s
"""
        )
        problem = _is_problem(await client.post("/apply", content=bad), 400)
        assert "request body" in str(problem["detail"])
        names = [job["name"] for job in (await client.get("/jobs")).json()["items"]]
        assert names == ["shop"]
        _is_problem(await client.post("/apply", content=b"\xff\xfe"), 400)


async def test_if_match_refuses_a_write_on_a_changed_endpoint(api: Api) -> None:
    async with api.client() as client:
        await client.post("/apply", content=JOBS)
        read = await client.get("/endpoints/shop/stock")
        tag = read.headers["etag"]
        # Another admin pauses it meanwhile.
        await set_pause(api.store.catalog, read.json()["id"], Pause("theirs"), api.clock.now())

        stale = await client.post(
            "/endpoints/shop/stock/pause", json={"reason": "mine"}, headers={"If-Match": tag}
        )
        _is_problem(stale, 412)
        assert (await client.get("/endpoints/shop/stock")).json()["paused"]["reason"] == "theirs"

        fresh = (await client.get("/endpoints/shop/stock")).headers["etag"]
        resumed = await client.post("/endpoints/shop/stock/resume", headers={"If-Match": fresh})
        assert resumed.status_code == 200
        assert resumed.json()["paused"] is None
        assert resumed.headers["etag"] != fresh
        # Without If-Match the write applies to the endpoint as it is.
        until = (api.clock.now() + timedelta(hours=1)).isoformat()
        paused = await client.post(
            "/endpoints/shop/stock/pause", json={"reason": "mine", "until": until}
        )
        assert paused.json()["paused"]["reason"] == "mine"


async def test_paging_walks_every_run_once_without_gaps(api: Api) -> None:
    start = api.clock.now()
    endpoint_id = await add_endpoint(api.store, "j", "e", start)
    made = [(await run_once(api.store, start + timedelta(minutes=n))).id for n in range(7)]
    seen: list[str] = []
    cursor = None
    async with api.client(Scope.READ) as client:
        while True:
            params = {"limit": 3, "endpoint": "j/e"} | ({"cursor": cursor} if cursor else {})
            page = (await client.get("/runs", params=params)).json()
            seen += [run["id"] for run in page["items"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == list(reversed(made))
        one = (await client.get(f"/runs/{made[0]}")).json()
        assert (one["endpoint"], one["endpoint_id"]) == ("j/e", endpoint_id)
        _is_problem(await client.get("/runs", params={"cursor": "garbage"}), 400)
        _is_problem(await client.get("/runs", params={"job": "nope"}), 404)


async def test_delete_refuses_an_upstream_then_takes_the_job_and_its_runs(api: Api) -> None:
    async with api.client() as client:
        await client.post("/apply", content=JOBS)
        run = await run_once(api.store, api.clock.now())
        refused = _is_problem(await client.delete("/endpoints/shop/stock"), 409)
        assert "shop/prices" in str(refused["detail"])
        # A job route never takes an endpoint's id (or its prefix) for a job.
        prices = await api.store.catalog.get_endpoint("shop/prices")
        _is_problem(await client.delete(f"/jobs/{prices.id[:6]}"), 404)
        assert (await api.store.catalog.get_endpoint("shop/prices")).id == prices.id

        deleted = await client.delete("/jobs/shop")
        assert deleted.json() == {"job": "shop", "endpoints": ["shop/prices", "shop/stock"]}
        _is_problem(await client.get(f"/runs/{run.id}"), 404)
        _is_problem(await client.get("/endpoints/shop/stock"), 404)
        _is_problem(await client.delete("/jobs/shop"), 404)


async def test_the_schema_route_marks_what_change_detection_leaves_out(api: Api) -> None:
    ignoring = JOBS.replace("interval: 60s", "interval: 60s\n        change_ignores: [latency_ms]")
    async with api.client(Scope.READ) as reader, api.client() as admin:
        await admin.post("/apply", content=ignoring)
        body = {"ok": True, "checked_at": "2030-01-07T12:00:00+00:00", "latency_ms": 3.5}
        await run_once(api.store, api.clock.now(), Response(status_code=200, body=body))
        stock = await api.store.catalog.get_endpoint("shop/stock")
        await rebuild_schema(api.store.unit_of_work, api.store.reading, stock, api.clock.now())
        await api.store.catalog.set_volatile_fields(stock.id, ["checked_at"])

        shown = (await reader.get("/endpoints/shop/stock/schema")).json()
        endpoint = (await reader.get("/endpoints/shop/stock")).json()

    properties = shown["schema"]["properties"]
    assert properties["checked_at"]["x-volatile"] is True
    assert properties["latency_ms"]["x-change-ignored"] is True
    assert "x-volatile" not in properties["ok"]
    assert (shown["volatile_fields"], shown["change_ignores"]) == (["checked_at"], ["latency_ms"])
    assert (endpoint["volatile_fields"], endpoint["change_ignores"]) == (
        ["checked_at"],
        ["latency_ms"],
    )


async def test_run_now_is_queued_for_the_token(api: Api) -> None:
    async with api.client(Scope.WRITE) as client:
        await client.post("/apply", content=JOBS)
        queued = await client.post("/endpoints/shop/stock/run")
        assert queued.status_code == 202
        assert (queued.json()["status"], queued.json()["requested_by"]) == (
            "queued",
            "token:write-bot",
        )


async def test_unknown_routes_methods_and_bad_input_are_problems(api: Api) -> None:
    async with api.client() as client:
        _is_problem(await client.get("/nowhere"), 404)
        _is_problem(await client.put("/jobs"), 405)
        invalid = _is_problem(await client.get("/runs", params={"limit": 0}), 422)
        assert "limit" in str(invalid["detail"])
        assert (await client.get("/openapi.json")).json()["openapi"].startswith("3.1")


async def test_proposals_page_and_an_admin_decides_them_once(api: Api) -> None:
    async with api.client() as client:
        await client.post("/apply", content=JOBS)
        stock = await api.store.catalog.get_endpoint("shop/stock")
        for n in range(3):
            await api.store.planner.add_proposal(
                Proposal(
                    id=new_id(),
                    endpoint_id=stock.id,
                    job_id=stock.job_id,
                    kind=ProposalKind.INTERVAL,
                    reason=f"faster {n}",
                    proposed_by="heuristic",
                    created_at=api.clock.now(),
                    status=ProposalStatus.PENDING,
                    interval_seconds=120.0,
                    ttl_seconds=600.0,
                )
            )
        first = (await client.get("/proposals", params={"limit": 2})).json()
        rest = (
            await client.get("/proposals", params={"limit": 2, "cursor": first["next_cursor"]})
        ).json()
        assert rest["next_cursor"] is None
        ids = [p["id"] for p in first["items"] + rest["items"]]
        assert len(set(ids)) == 3

        approved = (await client.post(f"/proposals/{ids[0]}/approve")).json()
        assert (approved["status"], approved["decided_by"]) == ("applied", "token:admin-bot")
        again = _is_problem(await client.post(f"/proposals/{ids[0]}/approve"), 409)
        assert again["detail"] == f"proposal {ids[0]} is applied, not pending"
        rejected = await client.post(f"/proposals/{ids[1]}/reject", json={"reason": "no"})
        assert rejected.json()["decided_by"] == "token:admin-bot"
        _is_problem(await client.post(f"/proposals/{ids[2]}/reject", json={"reason": " "}), 422)


async def test_a_superseded_proposal_is_listed_with_its_pointer_and_cannot_be_decided(
    api: Api,
) -> None:
    async with api.client() as client:
        await client.post("/apply", content=JOBS)
        stock = await api.store.catalog.get_endpoint("shop/stock")
        older = Proposal(
            id=new_id(),
            endpoint_id=stock.id,
            job_id=stock.job_id,
            kind=ProposalKind.INTERVAL,
            reason="faster",
            proposed_by="heuristic",
            created_at=api.clock.now(),
            status=ProposalStatus.PENDING,
            interval_seconds=120.0,
            ttl_seconds=600.0,
        )
        await api.store.planner.add_proposal(older)
        newer = await supersede(api.store, older.id, api.clock.now())

        listed = (await client.get("/proposals", params={"status": "superseded"})).json()
        shown = (await client.get(f"/proposals/{older.id}")).json()
        approving = _is_problem(await client.post(f"/proposals/{older.id}/approve"), 409)
        rejecting = _is_problem(
            await client.post(f"/proposals/{older.id}/reject", json={"reason": "no"}), 409
        )

    assert [p["id"] for p in listed["items"]] == [older.id]
    assert (shown["status"], shown["superseded_by"]) == ("superseded", newer.id)
    for refused in (approving, rejecting):
        assert refused["detail"] == (
            f"proposal {older.id} is superseded by proposal {newer.id}, not pending"
        )


async def test_the_autonomy_of_a_job_as_the_cli_shows_it(api: Api) -> None:
    async with api.client() as admin, api.client(Scope.READ) as client:
        await admin.post("/apply", content=JOBS)  # no mode: graded
        [shop] = (await client.get("/planner/autonomy", params={"job": "shop"})).json()
        _is_problem(await client.get("/planner/autonomy", params={"job": "nope"}), 404)

    assert shop == {"job": "shop", "planner_mode": "graded", "threshold": 0.92, "history": []}


async def test_a_revoked_token_is_401_and_every_write_names_its_token(api: Api) -> None:
    async with api.client(Scope.WRITE) as writer:
        assert (await writer.post("/apply", content=JOBS)).status_code == 200
        api.clock.advance(1)
        paused = await writer.post("/endpoints/shop/stock/pause", json={"reason": "maintenance"})
        assert paused.status_code == 200
        await revoke_token(api.store.unit_of_work, "write-bot", "cli:ann@web-1", api.clock.now())
        _is_problem(await writer.get("/jobs"), 401)

    entries = await list_audit(api.store.reading, actor="token:write-bot")
    assert [(e.action, e.target) for e in entries] == [
        ("pause", "shop/stock"),
        ("apply", "request body"),
    ]
    assert (await api.store.catalog.get_endpoint("shop/stock")).pause.by == "token:write-bot"


async def test_probes_and_metrics_need_no_token(api: Api) -> None:
    async with api.client(None) as anyone:
        assert (await anyone.get("/healthz")).status_code == 200
        ready = await anyone.get("/readyz")
        assert ready.status_code == 200, ready.text
        assert ready.json()["ready"] is True
        metrics = await anyone.get("/metrics")
        assert metrics.status_code == 200
        assert "cronpilot_due_backlog" in metrics.text


def test_an_ambiguous_id_prefix_is_bad_input() -> None:
    error = AmbiguousId("run", "3f2c", ["3f2c01", "3f2c02"], more=False)
    assert status_of(error) == HTTPStatus.BAD_REQUEST


async def test_apply_checks_conditions_as_the_cli_does(api: Api) -> None:
    """The learnt schema of stock is the one `cronpilot apply` checks against: a field it
    never answered is refused with its position, and nothing is written."""
    async with api.client() as client:
        await client.post("/apply", content=JOBS)
        stock = await api.store.catalog.get_endpoint("shop/stock")
        await run_once(api.store, api.clock.now(), Response(200, {"status": "ok"}))
        await rebuild_schema(api.store.unit_of_work, api.store.reading, stock, api.clock.now())
        gated = JOBS + "        run_if: stock.body.levels > 0\n"
        problem = _is_problem(await client.post("/apply", content=gated), 400)
        assert problem["detail"] == (
            "request body: job 'shop' endpoint 'prices' field 'run_if': at column 12: "
            "'stock' has answered no field 'levels' in its response (its fields: status)"
        )
        assert (await api.store.catalog.get_endpoint("shop/prices")).spec.run_if is None


async def test_apply_checks_rules_as_the_cli_does(api: Api) -> None:
    """A rule's action and its condition, in one problem naming `rules[N]`; nothing written."""
    async with api.client() as client:
        await client.post("/apply", content=JOBS)
        for rule, detail in (
            (
                "{when: 'stock.status == 200', then: speed_up}",
                "field 'rules[0].then': unknown action 'speed_up'; the actions are interval, "
                "run_now, pause, resume, baseline",
            ),
            (
                "{when: 'stock.status = 200', then: {pause: {for: 1m}}}",
                "field 'rules[0].when': at column 14: Syntax error: token recognition error at: "
                "'= '",
            ),
        ):
            ruled = JOBS + f"        rules: [{rule}]\n"
            problem = _is_problem(await client.post("/apply", content=ruled), 400)
            assert problem["detail"].startswith("request body: job 'shop' endpoint 'prices' ")
            assert problem["detail"].endswith(detail)
            assert (await api.store.catalog.get_endpoint("shop/prices")).spec.rules == ()
