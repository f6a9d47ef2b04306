"""Metric labels stay bounded: many runs with distinct URLs, run ids, trace ids and error texts
add no series beyond one per (job, endpoint, outcome, trigger)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from prometheus_client.parser import text_string_to_metric_families

from cronpilot.adapters.metrics import PrometheusTelemetry
from cronpilot.domain.model import (
    Attempt,
    Claim,
    Endpoint,
    EndpointSpec,
    Recorded,
    Run,
    RunStatus,
    RunTrigger,
    Schedule,
    ScheduleSource,
    SkipKind,
)
from cronpilot.domain.planning.approvals import ApprovalState, approval_request
from cronpilot.domain.planning.guardrails import GuardrailRule
from cronpilot.domain.planning.planning import (
    AnalysisSession,
    ProposalStatus,
    SessionStatus,
    ToolCallRecord,
)

T0 = datetime(2030, 1, 1, tzinfo=UTC)
RUNS = 600


def _endpoint(n: int) -> Endpoint:
    spec = EndpointSpec(f"e{n % 3}", f"https://example.com/{n}?token=s{n}", Schedule(60))
    return Endpoint(f"id-{n % 3}", "job-id", "shop", spec)


def _run(n: int) -> tuple[Claim, Recorded]:
    endpoint = _endpoint(n)
    slot = T0 + timedelta(seconds=n)
    claim = Claim(endpoint, f"run-{n}", slot, f"trace-{n}", slot, ScheduleSource.BASELINE)
    failed = n % 2 == 1
    run = Run(
        id=f"run-{n}",
        endpoint_id=endpoint.id,
        job_id="job-id",
        trace_id=f"trace-{n}",
        trigger=RunTrigger.SCHEDULE if n % 5 else RunTrigger.MANUAL,
        schedule_source=ScheduleSource.BASELINE,
        status=RunStatus.FAILED if failed else RunStatus.SUCCESS,
        slot_at=slot,
        started_at=slot + timedelta(milliseconds=n % 7),
        worker_id=f"worker-{n}",
        attempt=2,
        duration_ms=float(n),
        error_message=f"connection reset by 10.0.0.{n % 250} after {n} bytes" if failed else None,
        attempts=(Attempt(1, slot, 1.0, 500), Attempt(2, slot, 1.0, 500)),
    )
    return claim, Recorded(run, [], (SkipKind.UPSTREAM_FAILED,) if failed else ())


def _label_sets(exposition: str) -> dict[str, set[tuple[tuple[str, str], ...]]]:
    found: dict[str, set[tuple[tuple[str, str], ...]]] = {}
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            labels = {k: v for k, v in sample.labels.items() if k != "le"}
            found.setdefault(sample.name, set()).add(tuple(sorted(labels.items())))
    return found


def test_many_runs_with_distinct_urls_and_ids_add_no_series() -> None:
    telemetry = PrometheusTelemetry()
    for n in range(RUNS):
        claim, recorded = _run(n)
        telemetry.recorded(claim, recorded)
        telemetry.lease_lost(claim.endpoint)
        telemetry.proposed(ProposalStatus.REFUSED, GuardrailRule.RATE)
        session = AnalysisSession(
            id=f"session-{n}",
            endpoint_id=claim.endpoint.id,
            job_id="job-id",
            planner="heuristic",
            started_at=T0,
            finished_at=T0,
            status=SessionStatus.SUBMITTED,
            tool_calls=[ToolCallRecord(1, f"made_up_tool_{n}", {}, 1.0, 10, error="unknown")],
        )
        telemetry.analysed(claim.endpoint, session)

    body, _ = telemetry.exposition()
    text = body.decode()
    series = _label_sets(text)

    # 3 endpoints, 2 outcomes, 2 triggers: 12 series at most, whatever the 600 URLs and ids.
    assert len(series["cronpilot_runs_total"]) <= 12
    assert len(series["cronpilot_leases_lost_total"]) == 3
    assert series["cronpilot_planner_tool_calls_total"] == {(("error", "true"), ("tool", "other"))}
    assert series["cronpilot_dag_skips_total"] == {(("job", "shop"), ("reason", "upstream_failed"))}
    assert series["cronpilot_lateness_seconds_bucket"] == {(("job", "shop"),)}
    for forbidden in ("https://", "run-", "trace-", "worker-", "token=", "10.0.0.", "session-"):
        assert forbidden not in text
    values = {value for sets in series.values() for labels in sets for _, value in labels}
    assert len(values) < 30


def test_approvals_are_counted_by_outcome_never_by_id() -> None:
    telemetry = PrometheusTelemetry()
    for n in range(RUNS):
        claim, recorded = _run(n)
        gated = replace(
            claim.endpoint, spec=replace(claim.endpoint.spec, approval_timeout_seconds=60)
        )
        asked = approval_request(gated, f"dag-{n}", f"run-{n}", T0)
        telemetry.recorded(claim, replace(recorded, approvals=(asked,)))
        telemetry.approval_decided([ApprovalState.APPROVED, ApprovalState.REJECTED][n % 2])
    telemetry.approval_decided(ApprovalState.EXPIRED)

    families = text_string_to_metric_families(telemetry.exposition()[0].decode())
    counted = {
        sample.labels["outcome"]: sample.value
        for family in families
        for sample in family.samples
        if sample.name == "cronpilot_approvals_total"
    }

    assert counted == {"requested": RUNS, "approved": RUNS / 2, "rejected": RUNS / 2, "expired": 1}
