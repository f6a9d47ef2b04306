"""Shell completion as a shell asks for it: `cronpilot` run with `_CRONPILOT_COMPLETE` and the
words typed so far (bash's `COMP_WORDS`/`COMP_CWORD`, zsh's `_TYPER_COMPLETE_ARGS`) answers
the endpoint refs, job names and ids the store holds that start with the word being typed."""

from __future__ import annotations

from collections.abc import Callable

from cronpilot.adapters.sql import open_sql_store
from cronpilot.domain.model import new_id
from cronpilot.domain.planning.planning import Proposal, ProposalKind, ProposalStatus
from tests.contract.builders import T0, add_endpoint, run_once
from tests.e2e.conftest import Cli


def _bash(cli_for: Callable[..., Cli], url: str, words: str) -> list[str]:
    """What bash completes for the last of `words` (an empty last word: a trailing space)."""
    typed = words.split(" ")
    cli = cli_for(
        url,
        _CRONPILOT_COMPLETE="complete_bash",
        COMP_WORDS=words,
        COMP_CWORD=str(len(typed) - 1),
    )
    return cli().stdout.split()


async def _store_with_runs_and_a_proposal(url: str) -> tuple[str, str]:
    store = await open_sql_store(url)
    try:
        await add_endpoint(store, "shop", "orders", T0)
        await add_endpoint(store, "shop", "stock", T0)
        await add_endpoint(store, "billing", "invoices", T0)
        run = await run_once(store, T0)
        stock = await store.catalog.get_endpoint("shop/stock")
        proposal = Proposal(
            id=new_id(),
            endpoint_id=stock.id,
            job_id=stock.job_id,
            kind=ProposalKind.INTERVAL,
            reason="faster",
            proposed_by="heuristic",
            created_at=T0,
            status=ProposalStatus.PENDING,
            interval_seconds=120.0,
            ttl_seconds=600.0,
        )
        await store.planner.add_proposal(proposal)
        return run.id, proposal.id
    finally:
        await store.close()


async def test_refs_jobs_and_ids_complete_from_the_store(
    sqlite_url: str, cli_for: Callable[..., Cli]
) -> None:
    run_id, proposal_id = await _store_with_runs_and_a_proposal(sqlite_url)

    assert _bash(cli_for, sqlite_url, "cronpilot endpoints show sh") == [
        "shop/orders",
        "shop/stock",
    ]
    assert _bash(cli_for, sqlite_url, "cronpilot pause shop/st") == ["shop/stock"]
    assert _bash(cli_for, sqlite_url, "cronpilot endpoints list --job b") == ["billing"]
    assert _bash(cli_for, sqlite_url, "cronpilot delete ") == [
        "billing",
        "billing/invoices",
        "shop",
        "shop/orders",
        "shop/stock",
    ]
    assert _bash(cli_for, sqlite_url, f"cronpilot runs show {run_id[:3]}") == [run_id]
    assert _bash(cli_for, sqlite_url, "cronpilot proposals approve ") == [proposal_id]
    zsh = cli_for(
        sqlite_url, _CRONPILOT_COMPLETE="complete_zsh", _TYPER_COMPLETE_ARGS="cronpilot run shop/o"
    )
    assert '"shop/orders"' in zsh().stdout


def test_a_store_that_cannot_be_read_completes_nothing_and_says_nothing(
    tmp_path: object, cli_for: Callable[..., Cli]
) -> None:
    cli = cli_for(
        "sqlite+aiosqlite:////nonexistent/cronpilot.db",
        _CRONPILOT_COMPLETE="complete_bash",
        COMP_WORDS="cronpilot endpoints show ",
        COMP_CWORD="3",
    )
    done = cli()
    assert done.stdout.strip() == ""
    assert done.stderr == ""
