"""The console's limits page over HTTP: each key with its bounds and calls in flight, linked
from the navigation; with a job, only the keys its endpoints name."""

from __future__ import annotations

from cronpilot.adapters.jobs_file import parse_declarations
from cronpilot.domain.access.access import Scope
from cronpilot.usecases.declarations import apply_declarations
from tests.integration.api.test_console import Console, console
from tests.integration.api.test_limits_api import JOBS

__all__ = ["console"]


async def test_the_limits_page_lists_each_key_and_is_in_the_navigation(console: Console) -> None:
    declared = parse_declarations(JOBS, "jobs.yaml", [], {})
    await apply_declarations(
        console.store.unit_of_work,
        None,
        declared,
        "jobs.yaml",
        actor="cli:t@h",
        now=console.clock.now(),
    )
    async with console.signed_in(Scope.READ) as (client, _):
        every = await client.get("/console/limits")
        of_shop = await client.get("/console/limits", params={"job": "shop"})

    assert every.status_code == 200, every.text
    assert '<a href="/console/limits" aria-current="page">Limits</a>' in every.text
    assert "<td>partner-api</td>" in every.text and "<td>ledger-api</td>" in every.text
    assert "<td>5/s (burst 1)</td>" in every.text and "<td>100/m (burst 10)</td>" in every.text
    assert "<td>partner-api</td>" in of_shop.text and "ledger-api" not in of_shop.text
