"""The supervisor of `cronpilot scheduler --processes`: a child that keeps dying at start ends
the group with one line, a database no wait mends ends it at once, a stop ends every child."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest
import typer

from cronpilot.adapters.cli.scheduler_cmd import process_count
from cronpilot.adapters.process_group import CRASHES_AT_START, GroupFailed, ProcessGroup


def _group(code: str, count: int = 1) -> ProcessGroup:
    return ProcessGroup(
        [sys.executable, "-c", code], dict(os.environ), "grp", count, first_backoff=0.001
    )


async def test_a_child_crashing_at_start_again_and_again_ends_the_group() -> None:
    group = _group("raise SystemExit(1)")

    with pytest.raises(GroupFailed) as failed:
        await asyncio.wait_for(group.run(), 30)

    assert failed.value.code == 1
    assert str(failed.value) == (
        f"worker grp-1 exited within 10 s of its start {CRASHES_AT_START} times in a row "
        "(last exit 1); see its log above"
    )
    assert group.children[0].restarts == CRASHES_AT_START - 1


async def test_a_database_no_wait_mends_ends_the_group_at_once() -> None:
    group = _group("raise SystemExit(3)", count=2)

    with pytest.raises(GroupFailed) as failed:
        await asyncio.wait_for(group.run(), 30)

    assert failed.value.code == 3
    assert all(child.restarts == 0 for child in group.children)


async def test_a_stop_ends_every_child_and_the_group_cleanly() -> None:
    group = _group("import time; time.sleep(60)", count=2)
    running = asyncio.create_task(group.run())
    # The group has no event for its children having started: polled.
    while not (group.children and all(child.running for child in group.children)):  # noqa: ASYNC110
        await asyncio.sleep(0.01)

    group.stop.set()
    await asyncio.wait_for(running, 30)

    assert not any(child.running for child in group.children)
    assert group.readiness()[0] is False


def test_processes_is_a_count_or_auto_for_one_per_core() -> None:
    assert process_count("3") == 3
    assert process_count("auto") == (os.cpu_count() or 1)
    for wrong in ("0", "-1", "two", ""):
        with pytest.raises(typer.BadParameter):
            process_count(wrong)
