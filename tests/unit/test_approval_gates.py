"""Approval gates in the domain (`domain.planning.approvals`, `domain.graph.dag`) and in jobs files:
who asks when, what a decision does, and every mistake one line naming file, job, endpoint and
field."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cronpilot.adapters.jobs_export import export_document
from cronpilot.adapters.jobs_file import parse_declarations
from cronpilot.domain.alerts.alerts import approval_notifications
from cronpilot.domain.declaration_diff import FieldChange, FieldOutcome, planned_changes
from cronpilot.domain.errors import ApprovalNotPending, InvalidConfig
from cronpilot.domain.graph.dag import ParentOutcome, advance, declined
from cronpilot.domain.graph.dependencies import with_dependants
from cronpilot.domain.model import Endpoint, EndpointSpec, Pause, Schedule, SkipKind
from cronpilot.domain.planning.approvals import (
    EXPIRED_BY,
    ApprovalState,
    approval_request,
    decided,
    lapsed,
)

T0 = datetime(2030, 1, 1, tzinfo=UTC)
OK = ParentOutcome("run-1", "trace-1", ok=True)


def _job(**gate: Any) -> list[Endpoint]:
    """usage → cleanup (gated unless told otherwise) → report."""
    gate.setdefault("approval_timeout_seconds", 60.0)
    specs = [
        EndpointSpec("usage", "https://x.io/usage", Schedule(interval_seconds=60)),
        EndpointSpec("cleanup", "https://x.io/c", Schedule(), depends_on=("usage",), **gate),
        EndpointSpec("report", "https://x.io/r", Schedule(), depends_on=("cleanup",)),
    ]
    return [Endpoint(f"id-{s.name}", "job", "j", s) for s in with_dependants(specs)]


def _advance(job: list[Endpoint], outcome: ParentOutcome = OK, **kwargs: Any) -> Any:
    return advance(
        job, {}, job[0], outcome, dag=("dag-1", "usage"), worker_id="w", now=T0, **kwargs
    )


def test_a_gated_dependant_asks_instead_of_starting_and_keeps_its_wait() -> None:
    plan = _advance(_job())

    [approval] = plan.approvals
    assert (approval.endpoint_id, approval.dag_run_id, approval.parent_run_id) == (
        "id-cleanup",
        "dag-1",
        "run-1",
    )
    assert approval.expires_at == T0 + timedelta(seconds=60)
    assert plan.start == plan.finished == plan.skipped == []
    assert plan.waiting["id-cleanup"].parent_trace_id == "trace-1"
    assert not plan.waiting["id-cleanup"].ready


def test_a_skip_reason_wins_over_asking() -> None:
    failed = _advance(_job(), ParentOutcome("run-1", "trace-1", ok=False))
    paused = _advance(
        [replace(e, pause=Pause("by hand")) if e.name == "cleanup" else e for e in _job()]
    )

    for plan, kind in ((failed, SkipKind.UPSTREAM_FAILED), (paused, SkipKind.PAUSED)):
        assert plan.approvals == []
        assert plan.skips == [kind, SkipKind.UPSTREAM_SKIPPED]


def test_while_one_is_pending_the_dependant_is_skipped_and_no_other_is_asked_for() -> None:
    plan = _advance(_job(), gated={"id-cleanup"})

    assert plan.approvals == []
    assert plan.skips == [SkipKind.APPROVAL_PENDING, SkipKind.UPSTREAM_SKIPPED]


def test_declined_skips_the_dependant_and_reports_the_skip_on_through_advance() -> None:
    job = _job()
    asked = _advance(job)
    [approval] = asked.approvals
    rejected = decided(approval, ApprovalState.REJECTED, "token:ops", "too costly", T0)

    plan = declined(job, asked.waiting, rejected, T0)

    skip, follow = plan.skipped
    assert (skip.endpoint_id, skip.parent_trace_id, skip.worker_id) == (
        "id-cleanup",
        "trace-1",
        "token:ops",
    )
    assert skip.error_message == "skipped: approval rejected by token:ops: too costly"
    assert (follow.endpoint_id, follow.parent_trace_id) == ("id-report", skip.trace_id)
    assert plan.skips == [SkipKind.APPROVAL_REJECTED, SkipKind.UPSTREAM_SKIPPED]
    assert plan.finished[0] == asked.waiting["id-cleanup"]
    assert [w.endpoint_id for w in plan.finished] == ["id-cleanup", "id-report"]


def test_declined_with_its_wait_gone_changes_nothing() -> None:
    job = _job()
    [approval] = _advance(job).approvals
    expired = decided(approval, ApprovalState.EXPIRED, EXPIRED_BY, None, T0)

    plan = declined(job, {}, expired, T0)

    assert (plan.skipped, plan.finished, plan.waiting) == ([], [], {})


def test_an_approval_lapses_at_its_expiry_and_is_decided_once() -> None:
    [approval] = _advance(_job()).approvals
    assert not lapsed(approval, approval.expires_at - timedelta(seconds=1))
    assert lapsed(approval, approval.expires_at)

    approved = decided(approval, ApprovalState.APPROVED, "cli:ann@box", None, T0)

    assert not lapsed(approved, approval.expires_at)
    with pytest.raises(ApprovalNotPending, match=f"approval {approval.id} is approved"):
        decided(approved, ApprovalState.REJECTED, "cli:bob@box", None, T0)


def test_the_webhooks_of_the_dependant_hear_of_an_approval_waiting() -> None:
    job = _job(notify=("https://hooks.example.com/a", "https://hooks.example.com/b"))
    cleanup = job[1]
    approval = approval_request(cleanup, "dag-1", "run-1", T0)

    told = approval_notifications(cleanup, approval, T0)

    assert [n.url for n in told] == list(cleanup.spec.notify)
    assert {n.payload["id"] for n in told} == {told[0].payload["id"]}
    assert told[0].payload["approval"]["expires_at"] == "2030-01-01T00:01:00+00:00"
    assert approval_notifications(_job()[1], approval, T0) == []


# --- jobs files -------------------------------------------------------------------------------

BILLING = """\
jobs:
  - name: billing
    endpoints:
      - name: usage
        url: https://93.184.216.34/usage
        interval: 30s
      - name: cleanup
        url: https://93.184.216.34/cleanup
        depends_on: [usage]
        approval: required
"""


def _parse(text: str) -> list[EndpointSpec]:
    [declaration] = parse_declarations(text, "jobs.yaml", [])
    return list(declaration.endpoints)


def _error(text: str) -> str:
    with pytest.raises(InvalidConfig) as caught:
        parse_declarations(text, "jobs.yaml", [])
    return str(caught.value)


def test_approval_required_waits_an_hour_unless_told_otherwise() -> None:
    usage, cleanup = _parse(BILLING)
    assert (usage.approval_timeout_seconds, cleanup.approval_timeout_seconds) == (None, 3600.0)

    [_, timed] = _parse(BILLING + "        approval_timeout: 2h30m\n")

    assert timed.approval_timeout_seconds == 9000.0


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "interval: 30s",
            "interval: 30s\n        approval: required",
            "field 'approval': applies to an endpoint with depends_on only: a root endpoint "
            "has no DAG run to wait in",
        ),
        (
            "approval: required",
            "approval_timeout: 5m",
            "field 'approval_timeout': applies with approval: required only",
        ),
        ("approval: required", "approval: yes", "field 'approval': Input should be 'required'"),
        (
            "approval: required",
            "approval: required\n        approval_timeout: 8d",
            "field 'approval_timeout': must be at most 7d: a request filled from upstream "
            "answers that old is stale",
        ),
        (
            "approval: required",
            "approval: required\n        approval_timeout: soon",
            "field 'approval_timeout': 'soon' is not a duration",
        ),
        (
            "approval: required",
            "approval: required\n        approval_timeout: 0",
            "field 'approval_timeout': Input should be greater than 0",
        ),
    ],
)
def test_each_mistake_is_one_line_naming_file_job_endpoint_and_field(
    old: str, new: str, expected: str
) -> None:
    said = _error(BILLING.replace(old, new))

    assert said.startswith("jobs.yaml: job 'billing' endpoint ")
    assert expected in said
    assert "\n" not in said


def test_an_export_gives_the_gate_back_and_a_dry_run_names_its_change() -> None:
    timed = BILLING + "        approval_timeout: 10m\n"
    for text in (BILLING, timed):
        declared = parse_declarations(text, "jobs.yaml", [])
        exported = export_document(declared, with_secrets=True)
        again = parse_declarations(exported, "jobs.yaml", [])
        assert [d.endpoints for d in again] == [d.endpoints for d in declared]
    assert "approval_timeout" not in export_document(
        parse_declarations(BILLING, "jobs.yaml", []), with_secrets=True
    )

    [stored] = parse_declarations(BILLING, "jobs.yaml", [])
    [declared] = parse_declarations(timed, "jobs.yaml", [])
    specs = {f"billing/{s.name}": s for s in stored.endpoints}
    _, _, change = planned_changes([declared], {"billing": stored.job}, specs)

    assert change.fields == (
        FieldChange("approval_timeout_seconds", FieldOutcome.CHANGED, 3600.0, 600.0),
    )
