"""The JSON shape of an approval in `--json` output and the API (add keys, never rename)."""

from __future__ import annotations

from typing import Any

from cronpilot.adapters.views.formats import iso
from cronpilot.domain.planning.approvals import Approval


def approval_view(approval: Approval, endpoint_ref: str) -> dict[str, Any]:
    return {
        "id": approval.id,
        "endpoint": endpoint_ref,
        "endpoint_id": approval.endpoint_id,
        "dag_run_id": approval.dag_run_id,
        "parent_run_id": approval.parent_run_id,
        "state": approval.state.value,
        "requested_at": iso(approval.requested_at),
        "expires_at": iso(approval.expires_at),
        "decided_by": approval.decided_by,
        "decided_at": iso(approval.decided_at),
        "reason": approval.reason,
    }
