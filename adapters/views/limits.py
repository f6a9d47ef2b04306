"""A limit's key as people and scripts read it: its bounds, calls in flight and hold."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cronpilot.adapters.views.formats import iso

if TYPE_CHECKING:
    from cronpilot.domain.schedule.limits import LimitStatus


def limit_view(status: LimitStatus | None) -> dict[str, Any]:
    """`limit` of `endpoints show --json` and the API's endpoint (`limit_status_view`)."""
    return {"limit": None if status is None else limit_status_view(status)}


def limit_status_view(status: LimitStatus) -> dict[str, Any]:
    """A key as `limits list --json` and `GET /limits` show it: its bounds, calls in flight
    and the hold the last claim recorded (`held` 0: none now)."""
    state, limit = status.state, status.state.limit
    return {
        "key": limit.key,
        "concurrency": limit.concurrency,
        "rate": None if limit.rate is None else str(limit.rate),
        "burst": limit.burst,
        "in_flight": status.in_flight,
        "held": state.held,
        "hold_reason": None if state.hold_reason is None else state.hold_reason.value,
        "held_at": iso(state.held_at),
        "open_at": iso(state.open_at),
    }


def limit_text(status: LimitStatus | None) -> str:
    """`partner-api: 2/2 in flight, 5/s; holding 3 (concurrency) since 12:00:01`."""
    if status is None:
        return "-"
    state, limit = status.state, status.state.limit
    bounds = [f"{status.in_flight}/{limit.concurrency} in flight" if limit.concurrency else ""]
    bounds.append("" if limit.rate is None else f"{limit.rate} (burst {limit.burst})")
    text = f"{limit.key}: " + ", ".join(bound for bound in bounds if bound)
    if state.held and state.hold_reason is not None:
        text += f"; holding {state.held} ({state.hold_reason.value}) since {iso(state.held_at)}"
    return text
