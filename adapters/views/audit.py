"""An audit entry as scripts read it (`audit list --json`, `GET /audit`)."""

from __future__ import annotations

from typing import Any

from cronpilot.adapters.views.formats import iso
from cronpilot.domain.access.audit import AuditEntry


def entry_view(entry: AuditEntry) -> dict[str, Any]:
    """The `--json` shape: keys are a stable interface for scripts."""
    return {
        "id": entry.id,
        "at": iso(entry.at),
        "actor": entry.actor,
        "action": entry.action,
        "target": entry.target,
        "detail": entry.detail,
    }
