"""The console's part of the API's app: its pages, its static files (every one shipped in the
wheel, none from a CDN) and the key that signs its forms' CSRF tokens."""

from __future__ import annotations

import secrets
from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from cronpilot.adapters.console import (
    alert_pages,
    endpoint_pages,
    graph_page,
    limits_page,
    login,
    planner_pages,
    run_pages,
    search_page,
)
from cronpilot.adapters.console.pages import PREFIX

PAGES = (
    login,
    endpoint_pages,
    run_pages,
    planner_pages,
    alert_pages,
    graph_page,
    search_page,
    limits_page,
)
"""The modules whose `router` the console serves."""
STATIC = Path(__file__).parent / "static"
STATIC_URL = f"{PREFIX}/static"


def install_console(app: FastAPI) -> None:
    # A new key per process: a restart makes open forms stale, never a session.
    app.state.console_key = secrets.token_bytes(32)
    app.mount(STATIC_URL, StaticFiles(directory=STATIC), name="console-static")
    for pages in PAGES:
        app.include_router(pages.router)
