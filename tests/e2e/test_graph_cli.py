"""`schema` and `graph` commands end to end, and `apply` checking templates against what the
upstream has answered."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cronpilot.adapters.crypto import FernetCipher
from cronpilot.adapters.sql import open_sql_store
from cronpilot.domain.model import Finish, Response
from tests.e2e.conftest import Cli
from tests.e2e.test_admin_cli import one_error_line, write_jobs
from tests.support.finishing import finish_one, record_one

PIPELINE = """\
jobs:
  - name: etl
    endpoints:
      - name: fetch
        url: http://127.0.0.1:9/fetch
        interval: 30s
        change_ignores: [note]
      - name: transform
        url: http://127.0.0.1:9/transform?batch={{ fetch.batch_id }}
        depends_on: [fetch]
        only_if_changed: true
      - name: load
        url: http://127.0.0.1:9/load
        method: POST
        body: {rows: "{{ transform.rows }}"}
        depends_on: [transform]
      - name: audit
        url: http://127.0.0.1:9/audit
        method: POST
        body: {batch_id: "none yet"}
        interval: 1h
"""
BODIES = [
    {"batch_id": "b1", "records": 3},
    {"batch_id": "b2", "records": 0},
    {"batch_id": "b3", "records": 5, "note": "late"},
]


async def _record_fetches(database_url: str, key: str) -> None:
    """Three runs of etl/fetch, as a worker records them; the third adds a field."""
    store = await open_sql_store(database_url, FernetCipher(key))
    try:
        at = datetime.now(UTC) + timedelta(days=1)
        for body in BODIES:
            at += timedelta(minutes=1)
            claims = await store.claims.claim_due(at, "e2e", 60, 10)
            fetch = next(c for c in claims if c.endpoint.ref == "etl/fetch")
            for other in claims:
                if other is not fetch:
                    await store.claims.release(other, "e2e")
            await finish_one(
                store.claims,
                fetch,
                "e2e",
                Response(status_code=200, body=body, body_hash=str(body)),
                at,
            )
    finally:
        await store.close()


@pytest.fixture
def etl(cli_for: Callable[..., Cli], sqlite_url: str, tmp_path: Path) -> Cli:
    cli = cli_for(sqlite_url, CRONPILOT_ALLOWED_NETWORKS="127.0.0.1/32")
    cli("apply", "-f", write_jobs(tmp_path, PIPELINE))
    key = cli.secret_key()
    asyncio.run(_record_fetches(sqlite_url, key))
    return cli


def test_schema_backfill_and_show(etl: Cli) -> None:
    assert etl("schema", "show", "etl/fetch").stderr.startswith("no output schema yet")

    said = etl("schema", "backfill", "etl/fetch").stdout
    assert said.strip() == "rebuilt etl/fetch: 3 responses, 1 drift events"
    shown: dict[str, Any] = etl.json("schema", "show", "etl/fetch")
    assert shown["observations"] == 3
    assert shown["schema"]["required"] == ["batch_id", "records"]
    assert shown["schema"]["properties"]["note"]["x-seen"] == 1
    assert shown["schema"]["properties"]["note"]["x-change-ignored"] is True
    assert (shown["change_ignores"], shown["volatile_fields"]) == (["note"], [])
    [drift] = shown["drift"]
    assert drift["changes"] == ["note: new field"]
    table = etl("schema", "show", "etl/fetch").stdout
    assert "learnt from 3 responses" in table
    assert "not compared for a change, change_ignores: note" in table


def test_graph_show_suggest_and_export(etl: Cli) -> None:
    etl("schema", "backfill")
    shown = etl.json("graph", "show", "--job", "etl")["etl"]
    assert shown["nodes"] == ["etl", "etl/audit", "etl/fetch", "etl/load", "etl/transform"]
    assert shown["layers"] == [["etl/audit", "etl/fetch"], ["etl/transform"], ["etl/load"]]
    edges = {(e["from"], e["to"], e["type"]): e for e in shown["edges"]}
    assert edges["etl", "etl/fetch", "contains"]["source"] == "template"
    declared = edges["etl/fetch", "etl/transform", "dependency"]
    assert (declared["source"], declared["weight"], declared["count"]) == ("template", 0.5, 0)
    provided = edges["etl/fetch", "etl/transform", "provides"]
    assert (provided["coverage"], provided["source"]) == ("strict", "inferred")
    # Louvain: the chain and the audit its fetch could feed (provides, optional) are one.
    assert shown["communities"] == [["etl/audit", "etl/fetch", "etl/load", "etl/transform"]]
    table = etl("graph", "show").stdout
    assert "provides" in table
    assert "strict" in table
    assert "communities: 1: etl/audit, etl/fetch, etl/load, etl/transform" in table

    [suggestion] = etl.json("graph", "suggest")
    assert (suggestion["from"], suggestion["to"], suggestion["coverage"]) == (
        "fetch",
        "audit",
        "optional",
    )
    assert suggestion["fields"] == [{"output": "batch_id", "input": "body.batch_id", "how": "name"}]

    strongest = etl("graph", "path", "etl/fetch", "etl/load").stdout.strip()
    assert strongest == "etl/fetch -> etl/transform -> etl/load"
    no_path = etl("graph", "path", "etl/load", "etl/fetch", "--json", expect=1)
    assert one_error_line(no_path.stderr) == "error: no path from etl/load to etl/fetch"
    assert no_path.stdout == ""

    dot = etl("graph", "export", "--format", "dot").stdout
    assert dot.startswith("digraph cronpilot {")
    assert '"etl/fetch" -> "etl/transform" [label="dependency template x0"' in dot
    exported = json.loads(etl("graph", "export", "--format", "json").stdout)
    assert "etl/load" in exported["nodes"]
    etl("graph", "show", "--job", "nope", expect=1)


def test_graph_path_refuses_a_node_that_does_not_exist(etl: Cli) -> None:
    unknown = etl("graph", "path", "etl/fetch", "etl/nope", expect=1)
    assert one_error_line(unknown.stderr) == "error: no endpoint 'etl/nope'"
    no_job = etl("graph", "path", "nope", "etl/fetch", "--json", expect=1)
    assert one_error_line(no_job.stderr) == "error: no job 'nope'"


async def _record_a_dag_run(database_url: str, key: str, days: int = 1) -> None:
    """One DAG run fetch -> transform -> load, as a worker records it; load answers the field
    transform's request reads from fetch."""
    store = await open_sql_store(database_url, FernetCipher(key))
    bodies = {
        "etl/fetch": {"batch_id": "b1"},
        "etl/transform": {"rows": 3},
        "etl/load": {"batch": "b1", "loaded": 3},
    }
    try:
        at = datetime.now(UTC) + timedelta(days=days)
        claims = await store.claims.claim_due(at, "e2e", 60, 10)
        for other in claims:
            if other.endpoint.ref != "etl/fetch":
                await store.claims.release(other, "e2e")
        claims = [c for c in claims if c.endpoint.ref == "etl/fetch"]
        while claims:
            claim = claims.pop()
            body = bodies[claim.endpoint.ref]
            response = Response(status_code=200, body=body, body_hash=str(body))
            if claim.endpoint.spec.dependants:
                finish = Finish(claim, "e2e", response, at, 60)
                started = (await record_one(store.claims, finish)).started
                claims += started
            else:
                await finish_one(store.claims, claim, "e2e", response, at)
    finally:
        await store.close()


def test_graph_suggest_never_proposes_a_dependency_cycle(
    cli_for: Callable[..., Cli], sqlite_url: str, tmp_path: Path
) -> None:
    cli = cli_for(sqlite_url, CRONPILOT_ALLOWED_NETWORKS="127.0.0.1/32")
    cli("apply", "-f", write_jobs(tmp_path, PIPELINE))
    key = cli.secret_key()
    asyncio.run(_record_a_dag_run(sqlite_url, key))
    cli("schema", "backfill")

    suggested = {(s["from"], s["to"]) for s in cli.json("graph", "suggest")}

    # load runs after transform: load feeding transform would close the loop
    # transform -> load -> transform, which `apply` refuses.
    assert ("load", "transform") not in suggested
    assert ("fetch", "audit") in suggested


def test_runs_list_and_show_say_why_a_run_was_skipped(
    cli_for: Callable[..., Cli], sqlite_url: str, tmp_path: Path
) -> None:
    cli = cli_for(sqlite_url, CRONPILOT_ALLOWED_NETWORKS="127.0.0.1/32", COLUMNS="200")
    cli("apply", "-f", write_jobs(tmp_path, PIPELINE))
    key = cli.secret_key()
    asyncio.run(_record_a_dag_run(sqlite_url, key, days=1))
    asyncio.run(_record_a_dag_run(sqlite_url, key, days=2))
    [skipped, ran] = cli.json("runs", "list", "etl/transform")
    assert (skipped["status"], ran["status"]) == ("skipped", "success")
    reason = "skipped: only_if_changed: no upstream response changed"
    assert skipped["error_message"] == reason

    assert reason in cli("runs", "list", "etl/transform").stdout
    assert reason in cli("runs", "show", skipped["id"]).stdout


def test_apply_refreshes_the_provides_edges_of_changed_inputs(etl: Cli, tmp_path: Path) -> None:
    etl("schema", "backfill")

    def provides() -> set[tuple[str, str]]:
        edges = etl.json("graph", "show", "--job", "etl")["etl"]["edges"]
        return {(e["from"], e["to"]) for e in edges if e["type"] == "provides"}

    assert ("etl/fetch", "etl/audit") in provides()
    changed = PIPELINE.replace('body: {batch_id: "none yet"}', 'body: {region: "eu"}')
    etl("apply", "-f", write_jobs(tmp_path, changed, "v2.yaml"))

    # audit no longer takes a batch_id: fetch cannot feed it any more.
    assert ("etl/fetch", "etl/audit") not in provides()
    assert ("etl/fetch", "etl/transform") in provides()


def test_apply_refuses_a_template_field_the_upstream_never_answered(
    etl: Cli, tmp_path: Path
) -> None:
    etl("schema", "backfill", "etl/fetch")
    misspelt = write_jobs(
        tmp_path, PIPELINE.replace("{{ fetch.batch_id }}", "{{ fetch.batch }}"), "v2.yaml"
    )

    refused = etl("apply", "-f", misspelt, expect=2)

    assert one_error_line(refused.stderr) == (
        f"error: {misspelt}: job 'etl' endpoint 'transform' field 'query.batch': template "
        "{{ fetch.batch }}: 'fetch' has answered no field 'batch' in its response "
        "(its fields: batch_id, note, records)"
    )
    stored = etl.json("endpoints", "show", "etl/transform")
    assert stored["url"].endswith("?batch={{ fetch.batch_id }}")


@pytest.mark.parametrize(
    ("written", "problem"),
    [
        ("{{ fetch }}", "template {{ fetch }}: names no field of 'fetch'"),
        ("{{ fetch.batch id }}", "template {{ fetch.batch id }}: bad field path"),
        ("{{ fetch.batch_id }", "template {{ fetch.batch_id }: '{{' is not closed by '}}'"),
    ],
)
def test_apply_refuses_braces_that_make_no_placeholder_and_writes_nothing(
    etl: Cli, tmp_path: Path, written: str, problem: str
) -> None:
    malformed = write_jobs(tmp_path, PIPELINE.replace("{{ fetch.batch_id }}", written), "v2.yaml")

    refused = etl("apply", "-f", malformed, expect=2)

    assert one_error_line(refused.stderr).startswith(
        f"error: {malformed}: job 'etl' endpoint 'transform' field 'url': {problem}"
    )
    stored = etl.json("endpoints", "show", "etl/transform")
    assert stored["url"].endswith("?batch={{ fetch.batch_id }}")


def test_graph_suggest_intent_prints_a_dag_that_apply_dry_run_accepts(
    etl: Cli, tmp_path: Path
) -> None:
    etl("schema", "backfill")
    intent = "fetch the new batch, transform it, then load it"

    shown = etl("graph", "suggest", "--intent", intent, "--job", "etl").stdout
    found = etl.json("graph", "suggest", "--intent", intent, "--job", "etl")

    assert shown.startswith(f"# A DAG suggested for: {intent}\n# Never applied")
    assert "# fetch -> transform: dependency, confidence" in shown
    edges = {(e["from"], e["to"]) for e in found["edges"]}
    assert {("fetch", "transform"), ("transform", "load")} <= edges
    assert all(0 < e["confidence"] <= 1 for e in found["edges"])
    fragment = tmp_path / "suggested.yaml"
    fragment.write_text(shown, encoding="utf-8")
    checked = etl("apply", "-f", str(fragment), "--dry-run")
    assert "error" not in checked.stderr
    # Never applied by itself: the stored graph has not changed.
    assert etl.json("graph", "show", "--job", "etl")["etl"]["layers"] == [
        ["etl/audit", "etl/fetch"],
        ["etl/transform"],
        ["etl/load"],
    ]
    nothing = etl("graph", "suggest", "--intent", "   ", expect=2)
    assert "the query is empty" in one_error_line(nothing.stderr)
