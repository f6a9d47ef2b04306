"""How the CLI reads for people at a terminal of 80 columns (or fewer), into a pipe for `grep`,
and for scripts in JSON or YAML: the listings on a store populated by a planner story (runs,
proposals, sessions) plus a failed notification."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import timedelta

import pytest
import yaml

from cronpilot.adapters.sql import open_sql_store
from cronpilot.domain.alerts.alerts import AlertEvent, Notification
from cronpilot.domain.model import new_id
from cronpilot.domain.planning.planning import ProposalStatus
from tests.e2e.conftest import Cli, make_cli
from tests.support.use_cases import START, USE_CASES, run_story

WIDTH = 80
LONG_REASON = (
    "the fraud rate rose above five per cent for three observations in a row, so the "
    "investigator should run every ten seconds until it falls again"
)
AMBIGUOUS = ["abcd1" + "0" * 27, "abcd2" + "0" * 27]
LISTINGS = [
    ["jobs", "list"],
    ["endpoints", "list"],
    ["runs", "list", "flash-sale/investigator"],
    ["proposals", "list"],
    ["sessions", "list"],
    ["notifications", "list"],
    ["graph", "show"],
]


async def _populate(database_url: str) -> None:
    """The flash-sale story, a pending proposal with a long reason, and a notification whose
    delivery failed with a long error."""
    story = await run_story({c.name: c for c in USE_CASES}["flash-sale"], database_url)
    await story.store.close()
    store = await open_sql_store(database_url)
    try:
        endpoint = await store.catalog.get_endpoint("flash-sale/investigator")
        [applied, *_] = await store.planner.list_proposals(status=ProposalStatus.APPLIED)
        pending = replace(
            applied, id=AMBIGUOUS[0], status=ProposalStatus.PENDING, reason=LONG_REASON
        )
        pending = replace(pending, decided_by=None, decided_at=None, outcome=None)
        now = START + timedelta(minutes=5)
        alert = Notification(
            id=new_id(),
            endpoint_id=endpoint.id,
            job_id=endpoint.job_id,
            event=AlertEvent.PROPOSAL_PENDING,
            url="https://hooks.example.com/services/T000/B000/a-rather-long-webhook-path",
            payload={"event": "proposal_pending"},
            created_at=now,
            next_attempt_at=now,
        )
        await store.planner.add_proposal(pending, [alert])
        await store.planner.add_proposal(replace(pending, id=AMBIGUOUS[1]))
        [claimed] = await store.notifications.claim_due(now, "w", 30, 1)
        error = "connection refused by hooks.example.com:443 after 3 attempts " * 2
        await store.notifications.mark_failed(claimed.id, "w", error.strip(), None, now)
    finally:
        await store.close()


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Cli:
    home = tmp_path_factory.mktemp("look")
    url = f"sqlite+aiosqlite:///{home / 'story.db'}"
    asyncio.run(_populate(url))
    return make_cli(home, url, COLUMNS=str(WIDTH))


@pytest.mark.parametrize("args", LISTINGS, ids=" ".join)
def test_every_listing_fits_80_columns(cli: Cli, args: list[str]) -> None:
    shown = cli.on_terminal(*args)
    assert shown.strip(), "the listing is empty: the store was meant to hold something"
    too_wide = [line for line in shown.splitlines() if len(line) > WIDTH]
    assert too_wide == []


@pytest.mark.parametrize(
    ("args", "headers"),
    [
        (["runs", "list", "flash-sale/investigator"], "Run Slot Status Took Source Note"),
        (["proposals", "list"], "Proposal Endpoint Change Status By When"),
        (["sessions", "list"], "Session Endpoint When Planner Status Calls Tokens"),
        (["notifications", "list"], "Created Event Endpoint URL Status Attempts"),
    ],
    ids=lambda value: value if isinstance(value, str) else " ".join(value),
)
def test_headers_stay_whole_and_free_text_goes_under_its_row(
    cli: Cli, args: list[str], headers: str
) -> None:
    shown = cli.on_terminal(*args)
    assert shown.splitlines()[0].split() == headers.split()
    if args[0] == "proposals":
        # The reason did not fit beside the row: it has lines of its own, words whole.
        lines = shown.splitlines()
        start = lines.index(next(line for line in lines if "reason: the fraud" in line))
        block = []
        for line in lines[start:]:
            if not line.startswith("  "):
                break
            block.append(line.strip())
        assert " ".join(block) == f"reason: {LONG_REASON}"


def test_tables_show_short_ids_and_json_the_full_ones(cli: Cli) -> None:
    full = [p["id"] for p in cli.json("proposals", "list")]
    rows = cli.on_terminal("proposals", "list").splitlines()[1:]
    shown = [line.split()[0] for line in rows if line and not line.startswith(" ")]
    assert shown == [pid[:8] for pid in full]


def test_a_wide_terminal_keeps_every_column_on_one_line(cli: Cli) -> None:
    wide = make_cli(cli.home, cli.env["CRONPILOT_DATABASE_URL"], COLUMNS="400")
    shown = wide("proposals", "list").stdout.splitlines()
    assert shown[0].split() == ["Proposal", "Endpoint", "Change", "Status", "By", "When", "Reason"]
    assert any(line.endswith(LONG_REASON) for line in shown)


@pytest.mark.parametrize("columns", ["60", "40", "20"])
def test_at_a_narrow_terminal_the_keys_never_wrap(cli: Cli, columns: str) -> None:
    narrow = make_cli(cli.home, cli.env["CRONPILOT_DATABASE_URL"], COLUMNS=columns)
    refs = [e["ref"] for e in cli.json("endpoints", "list")]
    proposals = [(p["id"][:8], p["endpoint"]) for p in cli.json("proposals", "list")]

    endpoints = narrow.on_terminal("endpoints", "list").splitlines()
    listed = narrow.on_terminal("proposals", "list").splitlines()

    # Each key whole at the start of its row's first line, the other columns squeezed.
    assert [line.split()[0] for line in endpoints[1:] if line[:1].strip()] == refs
    rows = [line.split()[:2] for line in listed[1:] if line[:1].strip()]
    assert [tuple(row) for row in rows] == proposals


@pytest.mark.parametrize("args", [a for a in LISTINGS if a[0] != "graph"], ids=" ".join)
def test_into_a_pipe_each_row_is_one_line_whatever_columns_says(cli: Cli, args: list[str]) -> None:
    narrow = make_cli(cli.home, cli.env["CRONPILOT_DATABASE_URL"], COLUMNS="20")

    shown = narrow(*args).stdout.splitlines()

    assert len(shown) == 1 + len(cli.json(*args))  # the header, then one line per row
    assert all(line == line.rstrip() for line in shown)


def test_into_a_pipe_grep_finds_a_row_whole(cli: Cli) -> None:
    narrow = make_cli(cli.home, cli.env["CRONPILOT_DATABASE_URL"], COLUMNS="30")

    shown = narrow("proposals", "list").stdout.splitlines()

    [pending] = [line for line in shown if line.startswith(AMBIGUOUS[0][:8])]
    assert "flash-sale/investigator" in pending
    assert "pending" in pending
    assert pending.endswith(LONG_REASON)


def test_into_a_pipe_a_sheet_has_one_line_per_field(cli: Cli) -> None:
    narrow = make_cli(cli.home, cli.env["CRONPILOT_DATABASE_URL"], COLUMNS="30")
    shown = cli.json("proposals", "show", AMBIGUOUS[0])

    sheet = narrow("proposals", "show", AMBIGUOUS[0]).stdout.splitlines()

    [reason] = [line for line in sheet if line.startswith("reason")]
    assert reason.split(maxsplit=1)[1] == shown["reason"] == LONG_REASON


def test_output_yaml_and_json_hold_the_same_data(cli: Cli) -> None:
    as_json = json.loads(cli("sessions", "list", "--output", "json").stdout)
    assert json.loads(cli("sessions", "list", "--json").stdout) == as_json
    assert yaml.safe_load(cli("sessions", "list", "-o", "yaml").stdout) == as_json


def test_json_numbers_carry_no_binary_noise(cli: Cli) -> None:
    printed = cli("runs", "list", "flash-sale/fraud_score", "--json").stdout
    durations = [run["duration_ms"] for run in json.loads(printed)]
    assert durations and all(len(repr(d)) <= 12 for d in durations)


def test_json_is_refused_where_there_is_no_output_option(cli: Cli) -> None:
    refused = cli("db", "upgrade", "--json", expect=2)
    assert refused.stderr.strip() == "error: No such option: --json"


def test_shell_completion_completes_commands(cli: Cli) -> None:
    env = {
        **cli.env,
        "_CRONPILOT_COMPLETE": "complete_bash",
        "COMP_WORDS": "cronpilot proposals ap",
        "COMP_CWORD": "2",
    }
    completed = Cli(cli.home, env)().stdout.split()
    assert completed == ["approve"]


def test_completion_scripts_are_offered(cli: Cli) -> None:
    script = cli("--show-completion", "bash").stdout
    assert "_CRONPILOT_COMPLETE" in script


def test_commands_take_a_unique_id_prefix(cli: Cli) -> None:
    [run] = cli.json("runs", "list", "flash-sale/investigator", "--limit", "1")
    assert cli.json("runs", "show", run["id"][:8])["id"] == run["id"]
    [session] = cli.json("sessions", "list", "--limit", "1")
    assert cli.json("sessions", "show", session["id"][:8])["id"] == session["id"]
    endpoint = cli.json("endpoints", "show", "flash-sale/fraud_score")
    assert cli.json("endpoints", "show", endpoint["id"][:8])["ref"] == "flash-sale/fraud_score"
    assert cli.json("proposals", "show", "ABCD1")["id"] == AMBIGUOUS[0]


def test_an_ambiguous_prefix_is_one_line_naming_the_candidates(cli: Cli) -> None:
    refused = cli("proposals", "reject", "abcd", "--reason", "no", expect=2)
    assert refused.stderr == (
        f"error: proposal id prefix 'abcd' is ambiguous: {AMBIGUOUS[0]}, {AMBIGUOUS[1]}; "
        "give more characters\n"
    )
    assert cli.json("proposals", "show", "abcd2")["status"] == "pending"


def test_a_prefix_that_matches_nothing_is_not_found(cli: Cli) -> None:
    assert cli("proposals", "show", "abcf", expect=1).stderr == "error: no proposal 'abcf'\n"
    assert cli("runs", "show", "abc", expect=1).stderr == "error: no run 'abc'\n"


def test_help_is_wrapped_at_the_terminal_s_width_not_mid_sentence(cli: Cli) -> None:
    wide = make_cli(cli.home, cli.env["CRONPILOT_DATABASE_URL"], COLUMNS="200")

    shown = [line.strip() for line in wide("apply", "--help").stdout.splitlines()]
    planner = wide("planner", "--help").stdout

    assert (
        "Endpoints stored under a declared job but missing from the file are left alone "
        "(still scheduled) and listed; pause them to stop them."
    ) in shown
    # A command's line in its group's list is its first paragraph whole, not its first line.
    assert (
        "(its rules' session first, when it has rules), with each change held back and why."
        in planner
    )
