"""The MCP write tools of issue 25 through a real client over stdio: pause and resume a job,
cancel and retry a run, each recorded for the token; bad input one tool error."""

from __future__ import annotations

from cronpilot.domain.access.access import Scope
from cronpilot.usecases.access import list_audit
from tests.integration.mcp.conftest import World, call, over_stdio, tool_error


async def test_a_write_token_pauses_a_job_and_cancels_and_retries_runs(world: World) -> None:
    async with over_stdio(world, Scope.WRITE) as session:
        paused = await call(session, "pause_job", job="shop", reason="upkeep")
        unknown_job = await tool_error(session, "pause_job", job="etl", reason="upkeep")
        resumed = await call(session, "resume_job", job="shop")
        queued = await call(session, "run_now", endpoint="shop/stock")
        cancelled = await call(session, "cancel_run", run=queued["id"])
        again = await tool_error(session, "cancel_run", run=queued["id"])
        retried = await call(session, "retry_run", run=world.run_id)
        unknown_run = await tool_error(session, "retry_run", run="nope")
        cleared = await call(session, "clear_dag", run=world.run_id, node="prices")
        root_node = await tool_error(session, "clear_dag", run=world.run_id, node="stock")

    assert (paused["paused"]["reason"], paused["paused"]["by"]) == ("upkeep", "token:write-bot")
    assert unknown_job == "no job 'etl'"
    assert resumed["paused"] is None
    assert (cancelled["status"], cancelled["cancel_requested_by"]) == (
        "cancelled",
        "token:write-bot",
    )
    assert again == f"run {queued['id']} has finished (cancelled): nothing to cancel"
    assert (retried["status"], retried["trigger"], retried["requested_by"]) == (
        "queued",
        "manual",
        "token:write-bot",
    )
    assert unknown_run == "no run 'nope'"
    assert cleared == {"cleared": "shop/prices"}
    assert root_node == "shop/stock: is the DAG run's root: retry its run instead"
    async with world.store() as store:
        entries = await list_audit(store.reading, actor="token:write-bot")
    assert [(e.action, e.target) for e in entries] == [
        ("dag_clear", "shop/prices"),
        ("retry", "shop/stock"),
        ("cancel", "shop/stock"),
        ("run_now", "shop/stock"),
        ("resume", "shop"),
        ("pause", "shop"),
    ]
