"""Lessons from a planner in production (issue 13, item 3): the analysis says when to look
again, within bounds, and the planner honours it; a session's history reads are capped."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import timedelta

import pytest

from cronpilot.domain.ports import Store
from cronpilot.planner.session import Verdict, submitted
from cronpilot.planner.tools import HISTORY_READS, ToolBox
from tests.integration.planner.builders import answer, declare, spec
from tests.integration.planner.builders import make_planner as _make_planner
from tests.support.clock import FakeClock

# These tests read what every pass saw: quiet passes are stored too
# (`domain.schedule.quiet_passes`).
make_planner = functools.partial(_make_planner, planner_keep_quiet_sessions=True)


@dataclass
class Wishing:
    """An analyst that reads nothing and asks to be back in `seconds`."""

    seconds: float
    name: str = "llm:test"
    yields_to_rules: bool = False

    async def analyse(self, brief: str, toolbox: ToolBox) -> Verdict:
        await toolbox.call(
            "submit_analysis",
            {"reasoning": "ok", "confidence": 0.5, "next_analysis_in_seconds": self.seconds},
        )
        return submitted(toolbox)


@pytest.mark.parametrize(
    ("wished", "honoured"), [(600.0, 600.0), (5.0, 60.0), (10_000_000.0, 86_400.0)]
)
async def test_the_analysis_sets_when_to_look_again_clamped_to_a_minute_and_a_day(
    store: Store, clock: FakeClock, wished: float, honoured: float
) -> None:
    await declare(store, clock.now(), spec("a", every=10))
    await answer(store, "j/a", {"n": 1})
    planner = make_planner(store, Wishing(wished), clock)
    await planner.run_round()
    [session] = await store.planner.list_sessions()
    assert session.next_analysis_at == session.finished_at + timedelta(seconds=honoured)

    await answer(store, "j/a", {"n": 2})
    clock.advance(honoured - 1)
    await planner.run_round()
    assert len(await store.planner.list_sessions()) == 1
    clock.advance(1)
    await planner.run_round()
    assert len(await store.planner.list_sessions()) == 2


async def test_history_reads_past_the_cap_are_tool_errors_that_say_so(
    store: Store, clock: FakeClock
) -> None:
    await declare(store, clock.now(), spec("a", every=10))
    await answer(store, "j/a", {"n": 1})

    class Reading(Wishing):
        async def analyse(self, brief: str, toolbox: ToolBox) -> Verdict:
            for _ in range(HISTORY_READS + 1):
                await toolbox.call("get_response_history", {"limit": 1, "fields": []})
            return await super().analyse(brief, toolbox)

    await make_planner(store, Reading(600), clock).run_round()

    [session] = await store.planner.list_sessions()
    *read, refused, _ = session.tool_calls
    assert [call.error for call in read] == [None] * HISTORY_READS
    assert refused.error is not None
    assert refused.error.startswith(f"read cap reached ({HISTORY_READS} per analysis)")
    assert session.tool_errors == 1


async def test_the_analyst_is_briefed_on_health_by_window(store: Store, clock: FakeClock) -> None:
    await declare(store, clock.now(), spec("a", every=10))
    await answer(store, "j/a", {"n": 1})
    await answer(store, "j/a", {"n": 2}, status=503)
    briefs: list[str] = []

    class Listening(Wishing):
        async def analyse(self, brief: str, toolbox: ToolBox) -> Verdict:
            briefs.append(brief)
            return await super().analyse(brief, toolbox)

    await make_planner(store, Listening(600), clock).run_round()

    [brief] = briefs
    assert "Health by window: 1h 2 runs 50% ok; 4h 2 runs 50% ok; 24h 2 runs 50% ok" in brief
