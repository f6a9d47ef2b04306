"""The API's app factory: routers, problem documents and the context every route is handed."""

from __future__ import annotations

from fastapi import FastAPI

from cronpilot.adapters.api import (
    approvals_routes,
    catalog_routes,
    graph_routes,
    outputs_routes,
    planner_routes,
    probe_routes,
    runs_routes,
    search_routes,
)
from cronpilot.adapters.api.context import ApiContext
from cronpilot.adapters.api.problems import PROBLEM_JSON, install_problem_handlers
from cronpilot.adapters.console.app import install_console

_PROBLEM = {
    "description": "A problem document (RFC 9457)",
    "content": {
        PROBLEM_JSON: {
            "schema": {
                "type": "object",
                "required": ["type", "title", "status", "detail"],
                "properties": {
                    "type": {"type": "string"},
                    "title": {"type": "string"},
                    "status": {"type": "integer"},
                    "detail": {"type": "string"},
                },
            }
        }
    },
}


def build_api(context: ApiContext) -> FastAPI:
    """OpenAPI 3.1 at /openapi.json, docs at /docs; every route needs a bearer token but the
    probes (/healthz, /readyz, /metrics). The web console is at /console/ (not in the OpenAPI
    document: its pages take a token in a cookie, not a bearer header)."""
    app = FastAPI(
        title="cronpilot",
        summary="Calls HTTP endpoints on schedules and adapts the schedules safely.",
        version="1",
        responses=dict.fromkeys((400, 401, 403, 404, 409, 412, 422, 500, 503), _PROBLEM),
    )
    app.state.context = context
    install_problem_handlers(app)
    for routes in (
        catalog_routes,
        runs_routes,
        planner_routes,
        approvals_routes,
        outputs_routes,
        graph_routes,
        search_routes,
        probe_routes,
    ):
        app.include_router(routes.router)
    install_console(app)
    return app
