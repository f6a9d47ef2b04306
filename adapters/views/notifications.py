"""Notifications (alerts) as people and scripts read them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cronpilot.adapters.views.formats import iso
from cronpilot.domain.access.secrets import mask_url, mask_urls

if TYPE_CHECKING:
    from cronpilot.domain.alerts.alerts import Notification


def event_label(notification: Notification) -> str:
    """The event as a table shows it: `recovered (missed)` says which episode ended."""
    episode = (
        notification.payload.get("episode") if isinstance(notification.payload, dict) else None
    )
    kind = episode.get("kind") if isinstance(episode, dict) else None
    if notification.event.value == "recovered" and isinstance(kind, str):
        return f"recovered ({kind})"
    return notification.event.value


def hold_reason(notification: Notification) -> str | None:
    """Why a held notification was not sent: `blocked by etl/fetch`."""
    return None if notification.held_by is None else f"blocked by {notification.held_by}"


def target_kind(notification: Notification) -> str:
    """Where the notification goes, by kind: a `notify.urls` webhook is a `webhook` too."""
    target = notification.target
    return "webhook" if target is None else target.kind.value


def notification_view(notification: Notification, ref: str) -> dict[str, Any]:
    """The `--json` shape: keys are a stable interface for scripts."""
    n = notification
    return {
        "id": n.id,
        "event": n.event.value,
        "endpoint": ref,
        "endpoint_id": n.endpoint_id,
        "job_id": n.job_id,
        "url": mask_url(n.url),
        "target": None if n.target is None else n.target.kind.value,
        "kind": target_kind(n),
        "status": n.status.value,
        "attempts": n.attempts,
        "created_at": iso(n.created_at),
        "next_attempt_at": iso(n.next_attempt_at),
        "delivered_at": iso(n.delivered_at),
        "last_error": mask_urls(n.last_error) if n.last_error else None,
        "held_by": n.held_by,
        "reason": hold_reason(n),
        "payload": n.payload,
    }
