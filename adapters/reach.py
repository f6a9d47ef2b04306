"""What a request names, read the same way by the API, the console and the MCP server, so that
one check (`usecases.access.confine`) keeps a job-limited token to its jobs everywhere."""

from __future__ import annotations

from collections.abc import Iterable

from cronpilot.domain.access import Reach

_ID_PARAMS = {
    "run_id": "runs",
    "proposal_id": "proposals",
    "session_id": "sessions",
    "approval_id": "approvals",
}


def reach_of(params: Iterable[tuple[str, object]]) -> Reach:
    """What a request (its path and query parameters) or an MCP tool call (its arguments)
    names, by the parameter names every route and tool shares: `job`, `endpoint` (a ref or
    an id), `run_id`, `proposal_id`, `session_id`, `approval_id`. Empty values name nothing."""
    named: dict[str, list[str]] = {}
    for key, value in params:
        if isinstance(value, str) and value:
            named.setdefault(key, []).append(value)
    return Reach(
        jobs=tuple(named.get("job", ())),
        endpoints=tuple(named.get("endpoint", ())),
        **{field: tuple(named.get(param, ())) for param, field in _ID_PARAMS.items()},
    )
