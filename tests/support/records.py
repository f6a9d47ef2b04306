"""Records of every listed kind at two ages, for the `--since` / `--until` tests of the CLI
(`tests/e2e`) and the API (`tests/integration/api`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from cronpilot.domain.access.audit import audit_entry
from cronpilot.domain.alerts.alerts import AlertEvent, Notification
from cronpilot.domain.model import EndpointSpec, Job, RunTrigger, Schedule, new_id
from cronpilot.domain.planning.planning import (
    AnalysisOutcome,
    AnalysisSession,
    Proposal,
    ProposalKind,
    ProposalStatus,
    SessionStatus,
)
from cronpilot.domain.ports import JobDeclaration, Store
from cronpilot.domain.runs.transitions import queued_run
from cronpilot.usecases.declarations import apply_to_catalog

REF = "shop/stock"
OLD = timedelta(hours=3)
RECENT = timedelta(hours=1)


@dataclass(frozen=True)
class Aged:
    """The ids of one kind's two records: made `OLD` and `RECENT` before now."""

    old: str
    recent: str


async def two_of_each(store: Store, now: datetime) -> dict[str, Aged]:
    """Of runs, sessions, proposals, notifications and audit entries of `shop/stock`, one made
    three hours before `now` and one an hour before; by kind. The last session finishes an
    hour before `now`: the planner's last look."""
    spec = EndpointSpec("stock", "https://example.com/stock", Schedule(interval_seconds=86_400))
    await apply_to_catalog(store.catalog, [JobDeclaration(Job("shop"), [spec])], now - 2 * OLD)
    endpoint = await store.catalog.get_endpoint(REF)
    ages = (now - OLD, now - RECENT)
    runs = await store.claims.enqueue(
        [
            queued_run(
                endpoint, RunTrigger.BACKFILL, slot_at=at, due_at=now, requested_by="t", now=at
            )
            for at in ages
        ]
    )
    sessions, proposals, notifications, entries = [], [], [], []
    for at in ages:
        claim = await store.planner.claim_endpoint(REF, at, "p1", 60)
        session = AnalysisSession(
            new_id(), endpoint.id, endpoint.job_id, "heuristic", at, at, SessionStatus.SUBMITTED
        )
        outcome = AnalysisOutcome(None, False, at + timedelta(minutes=5), failed=False)
        await store.planner.finish_analysis(claim, "p1", session, outcome, at)
        sessions.append(session.id)
        proposal = Proposal(
            new_id(),
            endpoint.id,
            endpoint.job_id,
            ProposalKind.INTERVAL,
            "steady",
            "heuristic",
            at,
            ProposalStatus.APPLIED,
            interval_seconds=60,
        )
        notification = Notification(
            new_id(),
            endpoint.id,
            endpoint.job_id,
            AlertEvent.FAILING,
            "https://h.example",
            {},
            at,
            at,
        )
        await store.planner.add_proposal(proposal, [notification])
        proposals.append(proposal.id)
        notifications.append(notification.id)
        entry = audit_entry("cli:ann@host", "pause", REF, "", at)
        await store.access.record(entry)
        entries.append(entry.id)
    kinds = {
        "runs": [r.id for r in runs],
        "sessions": sessions,
        "proposals": proposals,
        "notifications": notifications,
        "audit": entries,
    }
    return {kind: Aged(*ids) for kind, ids in kinds.items()}
