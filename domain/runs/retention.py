"""Retention: how long each growing table keeps its rows, and which rows may go.

Runs keep the newest `retention_runs` per endpoint (`RunRepository.prune`) and, like the other
tables here, rows for a time window. What may go is decided here, once: the memory store calls
these functions, the SQL stores say the same in their DELETE (proven by the contract tests in
`tests/contract/test_retention_contract.py`). A row that still has work ahead is never pruned:
a proposal waiting for review, a notification not yet delivered, an approval not yet
decided.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from cronpilot.domain.access.audit import AuditEntry
from cronpilot.domain.alerts.alerts import Notification, NotificationStatus
from cronpilot.domain.planning.approvals import Approval, ApprovalState
from cronpilot.domain.planning.planning import AnalysisSession, Proposal, ProposalStatus
from cronpilot.domain.rules.rule_firing import RULES_PLANNER

PRUNE_BATCH = 500
"""Rows deleted per transaction: a DELETE holds its locks (SQLite's one write lock) no longer
than a batch takes, so claims and finishes are never held up by retention."""


@dataclass(frozen=True, slots=True)
class Retention:
    """How long each table keeps its rows (`adapters.settings`: `retention_*_days`)."""

    sessions: timedelta
    """Analysis sessions of the built-in planner and the LLM, with their tool calls."""
    rule_evaluations: timedelta
    """Rules sessions, which hold the rule evaluations."""
    proposals: timedelta
    """Decided proposals (applied, rejected, refused, expired, dropped …), by creation."""
    notifications: timedelta
    """Delivered or given-up notifications, by creation."""
    audit: timedelta
    """Audit entries: kept longest, they are the record of who did what."""
    approvals: timedelta
    """Decided (approved, rejected, expired) approval gates, by request."""
    runs: timedelta
    """Finished runs, by slot (and at most `retention_runs` per endpoint, whatever their
    age): on PostgreSQL whole days of history are dropped (`RunRepository.roll_history`)."""


@dataclass(frozen=True, slots=True)
class Cutoffs:
    """The instants before which rows may go, for one pruning pass at `now`."""

    sessions: datetime
    rule_evaluations: datetime
    proposals: datetime
    notifications: datetime
    audit: datetime
    approvals: datetime
    runs: datetime


def cutoffs(retention: Retention, now: datetime) -> Cutoffs:
    return Cutoffs(
        sessions=now - retention.sessions,
        rule_evaluations=now - retention.rule_evaluations,
        proposals=now - retention.proposals,
        notifications=now - retention.notifications,
        audit=now - retention.audit,
        approvals=now - retention.approvals,
        runs=now - retention.runs,
    )


def session_expired(
    session: AnalysisSession, sessions_before: datetime, rules_before: datetime
) -> bool:
    """Whether a session started before its window: a rules session's (`rules_before`) or an
    analyst's (`sessions_before`)."""
    before = rules_before if session.planner == RULES_PLANNER else sessions_before
    return session.started_at < before


def proposal_expired(proposal: Proposal, before: datetime) -> bool:
    """Whether a decided proposal was made before `before`; a pending one always stays."""
    return proposal.status is not ProposalStatus.PENDING and proposal.created_at < before


DELIVERY_ENDED = (NotificationStatus.DELIVERED, NotificationStatus.FAILED, NotificationStatus.HELD)


def notification_expired(notification: Notification, before: datetime) -> bool:
    """Whether a delivered (or given-up) notification was raised before `before`; one still
    to deliver always stays."""
    return notification.status in DELIVERY_ENDED and notification.created_at < before


def audit_expired(entry: AuditEntry, before: datetime) -> bool:
    return entry.at < before


def approval_expired(approval: Approval, before: datetime) -> bool:
    """Whether a decided approval was asked for before `before`; a pending one always stays
    (its expiry decides it first)."""
    return approval.state is not ApprovalState.PENDING and approval.requested_at < before
