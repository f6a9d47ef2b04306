"""Approval gates: a DAG dependant declared with `approval: required` waits, in its DAG run, for
an admin to approve it (it then starts as a child of the run that made it ready), reject it or
let it expire (both recorded as its skip). Only one approval of an endpoint waits at a time: a
DAG run reaching it meanwhile skips it (`SkipKind.APPROVAL_PENDING`), so a frequent upstream
never piles up approvals and notifications.

This module holds the approval itself and its decisions; `domain.graph.dag` decides when one is
asked for and what a decision does to the DAG run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum

from cronpilot.domain.errors import ApprovalNotPending
from cronpilot.domain.model import Endpoint, SkipKind, new_id

DEFAULT_APPROVAL_TIMEOUT_SECONDS = 3600.0
MAX_APPROVAL_TIMEOUT_SECONDS = 7 * 86400.0
"""A week: a request filled from upstream answers older than that is stale, and a wait that
long is no gate but a forgotten one."""
EXPIRED_BY = "cronpilot"
"""Who decides an approval that nobody decided in time."""


class ApprovalState(StrEnum):
    PENDING = "pending"
    """Waiting for an admin until `expires_at`."""
    APPROVED = "approved"
    """The dependant starts (`DagRepository.claim_ready`)."""
    REJECTED = "rejected"
    EXPIRED = "expired"


@dataclass(frozen=True, slots=True)
class Approval:
    id: str
    dag_run_id: str
    parent_run_id: str
    """The upstream run whose report made the dependant ready: what it would follow."""
    endpoint_id: str
    job_id: str
    requested_at: datetime
    expires_at: datetime
    state: ApprovalState = ApprovalState.PENDING
    decided_by: str | None = None
    """`token:NAME`, `cli:USER@HOST`, or `EXPIRED_BY`."""
    decided_at: datetime | None = None
    reason: str | None = None


def approval_request(
    endpoint: Endpoint, dag_run_id: str, parent_run_id: str, now: datetime
) -> Approval:
    """The approval a gated dependant asks for once every parent has reported."""
    timeout = endpoint.spec.approval_timeout_seconds
    assert timeout is not None, "only an endpoint with approval: required asks"
    return Approval(
        id=new_id(),
        dag_run_id=dag_run_id,
        parent_run_id=parent_run_id,
        endpoint_id=endpoint.id,
        job_id=endpoint.job_id,
        requested_at=now,
        expires_at=now + timedelta(seconds=timeout),
    )


def lapsed(approval: Approval, now: datetime) -> bool:
    """Pending past its expiry: an approval that comes too late expires instead."""
    return approval.state is ApprovalState.PENDING and approval.expires_at <= now


def decided(
    approval: Approval, state: ApprovalState, by: str, reason: str | None, now: datetime
) -> Approval:
    """`approval` decided. Raises `ApprovalNotPending` when it was decided already."""
    if approval.state is not ApprovalState.PENDING:
        raise ApprovalNotPending(approval.id, approval.state)
    return replace(approval, state=state, decided_by=by, decided_at=now, reason=reason)


def skip_of(approval: Approval) -> tuple[SkipKind, str]:
    """Why the dependant of a rejected or expired approval is skipped (kind, in words)."""
    if approval.state is ApprovalState.REJECTED:
        why = f": {approval.reason}" if approval.reason else ""
        return SkipKind.APPROVAL_REJECTED, f"approval rejected by {approval.decided_by}{why}"
    assert approval.state is ApprovalState.EXPIRED, "only a declined approval skips"
    return (
        SkipKind.APPROVAL_EXPIRED,
        f"approval expired: no decision by {approval.expires_at.isoformat()} (approval_timeout)",
    )
