"""The audit log: one entry per write an admin or a token made, written in the unit of work of
the change itself, so that no change goes unrecorded and no entry names a change that was
rolled back."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, get_args

from cronpilot.domain.model import new_id
from cronpilot.domain.runs.excerpt import excerpt

AuditAction = Literal[
    "apply",
    "delete",
    "pause",
    "resume",
    "run_now",
    "backfill",
    "cancel",
    "retry",
    "dag_clear",
    "approve",
    "reject",
    "token_create",
    "token_revoke",
    "token_rotate",
    "notify_test",
    "redeliver",
]
AUDIT_ACTIONS: tuple[AuditAction, ...] = get_args(AuditAction)
DETAIL_CHARS = 300
"""A detail is a line for people; the change itself is in the records it names."""


@dataclass(frozen=True, slots=True)
class AuditCursor:
    """Where a page of the log (newest first) ended: the next page starts after this entry."""

    at: datetime
    id: str


@dataclass(frozen=True, slots=True)
class AuditEntry:
    id: str
    at: datetime
    actor: str
    """`token:NAME` or `cli:USER@HOST` (`domain.access.access`)."""
    action: AuditAction
    target: str
    """What was changed: an endpoint ref, a proposal id, a token name, a jobs file."""
    detail: str

    @property
    def cursor(self) -> AuditCursor:
        return AuditCursor(self.at, self.id)


def audit_entry(
    actor: str, action: AuditAction, target: str, detail: str, now: datetime
) -> AuditEntry:
    return AuditEntry(new_id(), now, actor, action, target, excerpt(detail, DETAIL_CHARS))


def log_order(entry: AuditEntry) -> tuple[datetime, str]:
    """The log's order, oldest first (by time, then id): it is read in reverse."""
    return entry.at, entry.id
