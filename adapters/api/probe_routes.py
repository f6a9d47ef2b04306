"""The API process's probes and metrics, the same pages a worker serves on `--metrics-port`
(`adapters/probes.py`). Open to every caller, as Kubernetes and Prometheus call them, and left
out of the OpenAPI document: they are for operators, not for clients of the API."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import APIRouter, Response

from cronpilot.adapters.probes import Page, alive
from cronpilot.adapters.web.context import Context

router = APIRouter(include_in_schema=False)


def _response(page: Page) -> Response:
    status, body, content_type = page
    return Response(content=body, status_code=status, media_type=content_type)


async def _served(page: Callable[[], Awaitable[Page]]) -> Response:
    return _response(await page())


@router.get("/healthz")
async def healthz() -> Response:
    """200 while the process runs."""
    return await _served(alive)


@router.get("/readyz")
async def readyz(ctx: Context) -> Response:
    """200 when the database answers and its schema is at this build's newest migration."""
    return await _served(ctx.probes.ready)


@router.get("/metrics")
async def metrics(ctx: Context) -> Response:
    """Prometheus text format: proposals decided through the API, scrape-time gauges."""
    return await _served(ctx.probes.metrics)
