"""Imports with Python's garbage collector paused.

Importing SQLAlchemy, pydantic and typer makes hundreds of thousands of objects and no garbage;
each collection the allocations trigger walks them all again for nothing (~0.06 s of a read
command's start, docs/decisions/0022-cli-start-up.md). Paused, then frozen, they are never
walked: frozen objects stay out of every later collection too.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Collect nothing inside; freeze what is alive when leaving, and collect as before."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
