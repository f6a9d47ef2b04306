"""A run as people and scripts read it."""

from __future__ import annotations

from cronpilot.domain.model import Run


def run_status(run: Run) -> str:
    """`success 200`, `failed 503`, `abandoned`."""
    code = f" {run.status_code}" if run.status_code is not None else ""
    return f"{run.status.value}{code}"
