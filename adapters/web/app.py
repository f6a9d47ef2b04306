"""The web server's app factory: the API's routers and the console's pages on one app, with
problem documents and the context every route and page is handed."""

from __future__ import annotations

from fastapi import Depends, FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse

from cronpilot.adapters.api import (
    approvals_routes,
    catalog_routes,
    graph_routes,
    operations_routes,
    outputs_routes,
    planner_routes,
    probe_routes,
    runs_routes,
    search_routes,
    tokens_routes,
)
from cronpilot.adapters.api.request_metrics import RequestMetrics
from cronpilot.adapters.api.responses import TidyJSONResponse
from cronpilot.adapters.console.app import STATIC_URL, install_console
from cronpilot.adapters.web.context import ApiContext
from cronpilot.adapters.web.problems import PROBLEM_JSON, install_problem_handlers
from cronpilot.adapters.web.strict import known_input_only

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


ROUTES = (
    catalog_routes,
    runs_routes,
    planner_routes,
    approvals_routes,
    outputs_routes,
    graph_routes,
    search_routes,
    operations_routes,
    probe_routes,
    tokens_routes,
)
"""The modules whose `router` the API serves."""


def build_api(context: ApiContext) -> FastAPI:
    """OpenAPI 3.1 at /openapi.json, docs at /docs; every route needs a bearer token but the
    probes (/healthz, /readyz, /metrics). The web console is at /console/ (not in the OpenAPI
    document: its pages take a token in a cookie, not a bearer header)."""
    app = FastAPI(
        title="cronpilot",
        summary="Calls HTTP endpoints on schedules and adapts the schedules safely.",
        version="1",
        responses=dict.fromkeys((400, 401, 403, 404, 409, 412, 422, 500, 503), _PROBLEM),
        docs_url=None,
        redoc_url=None,
    )
    app.state.context = context
    install_problem_handlers(app)
    for routes in ROUTES:
        # The console's pages are left out: a browser's links carry notes of their own.
        # The response class is given, not left to FastAPI's default: a route left to the
        # default is serialised by pydantic straight to bytes, past any response class.
        app.include_router(
            routes.router,
            dependencies=[Depends(known_input_only)],
            default_response_class=TidyJSONResponse,
        )
    install_console(app)
    app.add_middleware(RequestMetrics, telemetry=context.probes.telemetry)
    app.add_api_route("/docs", _docs, include_in_schema=False)
    return app


async def _docs() -> HTMLResponse:
    """Swagger UI from the package's own files (`scripts/vendor_console_assets.sh`), not from
    FastAPI's CDN: the docs work where the server has no way out, and tell no CDN who reads
    them. No validator badge either: it would send the document to validator.swagger.io."""
    return get_swagger_ui_html(
        openapi_url="/openapi.json",
        title="cronpilot API",
        swagger_js_url=f"{STATIC_URL}/vendor/swagger-ui-bundle.js",
        swagger_css_url=f"{STATIC_URL}/vendor/swagger-ui.css",
        swagger_favicon_url=f"{STATIC_URL}/favicon.svg",
        swagger_ui_parameters={"validatorUrl": None},
    )
