"""/approvals through real HTTP on loopback, on SQLite and PostgreSQL: read tokens list them page
by page, only admin tokens decide, once; the OpenAPI document describes them."""

from __future__ import annotations

from cronpilot.domain.access.access import Scope
from cronpilot.domain.model import Finish, Response
from tests.integration.api.conftest import Api
from tests.integration.api.test_api import _is_problem
from tests.support.finishing import record_one

JOBS = """
jobs:
  - name: billing
    endpoints:
      - name: usage
        url: https://example.com/usage
        interval: 60s
      - name: cleanup
        url: https://example.com/cleanup
        depends_on: [usage]
        approval: required
"""


async def _read_usage(api: Api) -> str:
    """usage answers at the clock's now: cleanup waits; returns its approval's id."""
    [claim] = await api.store.claims.claim_due(api.clock.now(), "w1", 60, 1)
    ok = Response(status_code=200, body={"spend": 1}, body_hash=str(api.clock.now()))
    recorded = await record_one(api.store.claims, Finish(claim, "w1", ok, api.clock.now(), 60))
    [approval] = recorded.approvals
    return approval.id


async def test_readers_list_and_only_admins_decide_once(api: Api) -> None:
    async with api.client() as admin:
        assert (await admin.post("/apply", content=JOBS)).status_code == 200
    approval_id = await _read_usage(api)

    async with api.client(Scope.READ) as reader:
        listed = (await reader.get("/approvals", params={"state": "pending"})).json()
        _is_problem(await reader.post(f"/approvals/{approval_id}/approve"), 403)
    async with api.client(Scope.WRITE) as writer:
        _is_problem(await writer.post(f"/approvals/{approval_id}/reject"), 403)
    async with api.client(Scope.ADMIN) as admin:
        approved = await admin.post(
            f"/approvals/{approval_id[:6]}/approve", json={"reason": " budget  ok "}
        )
        again = _is_problem(await admin.post(f"/approvals/{approval_id}/reject"), 409)
        _is_problem(await admin.post(f"/approvals/{'0' * 32}/approve"), 404)

    [waiting] = listed["items"]
    assert (waiting["id"], waiting["endpoint"], waiting["state"]) == (
        approval_id,
        "billing/cleanup",
        "pending",
    )
    assert approved.status_code == 200
    assert (approved.json()["state"], approved.json()["decided_by"], approved.json()["reason"]) == (
        "approved",
        "token:admin-bot",
        "budget ok",
    )
    assert again["detail"] == f"approval {approval_id} is approved, not pending"


async def test_approvals_page_newest_first_and_a_rejection_needs_no_reason(api: Api) -> None:
    async with api.client() as admin:
        await admin.post("/apply", content=JOBS)
        asked = []
        for _ in range(3):
            asked.append(await _read_usage(api))
            rejected = await admin.post(f"/approvals/{asked[-1]}/reject")
            assert rejected.json()["state"] == "rejected"
            api.clock.advance(60)
        _is_problem(await admin.post(f"/approvals/{asked[0]}/reject", json={"reason": " "}), 422)
        first = (await admin.get("/approvals", params={"limit": 2})).json()
        rest = await admin.get("/approvals", params={"limit": 2, "cursor": first["next_cursor"]})
        by_job = await admin.get("/approvals", params={"job": "billing", "state": "rejected"})
        _is_problem(await admin.get("/approvals", params={"state": "maybe"}), 422)
        _is_problem(await admin.get("/approvals", params={"job": "nope"}), 404)

    assert rest.json()["next_cursor"] is None
    assert [a["id"] for a in first["items"] + rest.json()["items"]] == list(reversed(asked))
    assert len(by_job.json()["items"]) == 3


async def test_the_openapi_document_describes_the_approvals_routes(api: Api) -> None:
    async with api.client(None) as anyone:
        paths = (await anyone.get("/openapi.json")).json()["paths"]

    assert set(paths["/approvals"]) == {"get"}
    assert set(paths["/approvals/{approval_id}/approve"]) == {"post"}
    assert set(paths["/approvals/{approval_id}/reject"]) == {"post"}
