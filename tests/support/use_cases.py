"""A scripted model that sits the planner exams (`harness/exams`) sensibly: the LLM planner
through the real `openai` SDK against `FakeOpenAI`, whose policy reads only what the planner
shows it — the prompt (with the newest responses summed up, or with `paste_latest` pasted
whole), and the tool results — and decides as a sensible model would.

The five use cases are the exams' first five, told as stories whose store the end-to-end tests
inspect; `bench/token_economy.py` tells them twice, with tools and with responses pasted.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from cronpilot.adapters.bootstrap import planner_config
from cronpilot.adapters.clock import SystemClock
from cronpilot.adapters.llm.openai_client import OpenAIChat
from cronpilot.adapters.sql import SqlStore
from cronpilot.harness.exams import catalog
from cronpilot.harness.exams.catalog import Exam
from cronpilot.harness.exams.runner import exam_config, sit
from cronpilot.harness.stories import START
from cronpilot.planner.session import LlmAnalyst
from cronpilot.planner.tools import ToolKind
from tests.support.fake_openai_server import Call, Calls, FakeOpenAI, Request, submit, tool_results
from tests.support.settings import settings_for_tests

__all__ = ["START", "USE_CASES", "Story", "policy", "run_story"]

LOOK_AGAIN_SECONDS = 4

Decide = Callable[[Any, "Brief"], list[Call]]
UNREAD = object()


@dataclass(frozen=True)
class Need:
    """What the model reads before deciding: one field of the latest response of `endpoint`
    (a sibling's name, or None for the analysed endpoint itself)."""

    field: str
    decide: Decide
    endpoint: str | None = None


@dataclass(frozen=True)
class Brief:
    ref: str
    now: datetime
    text: str

    @property
    def hints(self) -> str:
        match = re.search(r"^Hints now: (.*)$", self.text, re.MULTILINE)
        return match.group(1) if match else ""

    def later(self, seconds: float) -> str:
        return (self.now + timedelta(seconds=seconds)).isoformat()


def _brief(request: Request) -> Brief:
    text = request["messages"][1]["content"]
    ref = re.match(r"Endpoint (\S+) ", text)
    now = re.search(r"^Now: (\S+)$", text, re.MULTILINE)
    assert ref is not None and now is not None, text
    return Brief(ref.group(1), datetime.fromisoformat(now.group(1)), text)


def _pasted_value(brief: Brief, need: Need) -> Any:
    match = re.search(r"^Latest responses: (.*)$", brief.text, re.MULTILINE)
    assert match is not None
    pasted = json.loads(match.group(1))
    own = brief.ref.split("/", 1)[1]
    run = pasted["siblings"].get(need.endpoint) if need.endpoint else pasted[own]["run"]
    body = (run or {}).get("body") or {}
    return body.get(need.field)


def _summed_up(brief: Brief, need: Need) -> Any:
    """The field's value as the brief's summary of the newest responses shows it; `UNREAD`
    when it does not show it whole."""
    name = need.endpoint or brief.ref.split("/", 1)[1]
    line = re.search(rf"^- {re.escape(name)}: [^;]*; (.*)$", brief.text, re.MULTILINE)
    shown = dict(part.split("=", 1) for part in line.group(1).split(", ")) if line else {}
    text = shown.get(need.field)
    return UNREAD if text is None or text.endswith("…") else json.loads(text)


def policy(needs: Mapping[str, Need]) -> Callable[[Request], Calls]:
    """A model that takes the field it needs from the brief (the pasted responses, or the
    summary of the newest ones), else reads it, then decides, acts, and submits. `needs` is by
    analysed endpoint ref; the endpoints not listed are looked at and left alone."""

    def reply(request: Request) -> Calls:
        brief = _brief(request)
        need = needs.get(brief.ref)
        results = tool_results(request)
        if need is None:
            return submit(f"looked at {brief.ref}", again=LOOK_AGAIN_SECONDS)
        pasted = "Latest responses: " in brief.text
        value = _pasted_value(brief, need) if pasted else _summed_up(brief, need)
        reads = 1 if value is UNREAD else 0
        if len(results) > reads:
            return submit(f"looked at {brief.ref}", again=LOOK_AGAIN_SECONDS)
        if reads and not results:
            read = {"endpoint": need.endpoint, "fields": [need.field]}
            return Calls([Call("get_latest_response", read)])
        if reads:
            run = results[0].get("run") or {}
            value = (run.get("fields") or {}).get(need.field)
        actions = need.decide(value, brief)
        if not actions:
            return submit(f"{need.field}={value}: no change", again=LOOK_AGAIN_SECONDS)
        return Calls(actions)

    return reply


def _interval(seconds: float, reason: str, ttl: float = 300) -> Call:
    return Call(
        "propose_interval", {"interval_seconds": seconds, "ttl_seconds": ttl, "reason": reason}
    )


def _once_soon(brief: Brief, reason: str) -> Call:
    arguments = {"at": brief.later(1), "ttl_seconds": 60, "reason": reason}
    return Call("propose_next_time", arguments)


def _investigate(rate: Any, brief: Brief) -> list[Call]:
    if not isinstance(rate, float):
        return []
    if rate > 0.05 and "interval 10s" not in brief.hints:
        switch_on = [_interval(10, f"fraud_rate {rate} is above 0.05: investigate every 10 s")]
        if "paused" in brief.hints:
            resume = Call("pause_until", {"until": None, "reason": f"fraud_rate {rate} > 0.05"})
            switch_on.insert(0, resume)
        return switch_on
    if rate < 0.02 and "paused" not in brief.hints:
        reason = f"fraud_rate {rate} is below 0.02: investigator off"
        return [Call("pause_until", {"until": brief.later(600), "reason": reason})]
    return []


def _transform(records: Any, brief: Brief) -> list[Call]:
    if isinstance(records, int) and records > 0 and "one-shot" not in brief.hints:
        return [_once_soon(brief, f"fetch reported {records} records: transform them")]
    return []


def _region(status: Any, brief: Brief) -> list[Call]:
    if status in ("degraded", "down") and "interval 2s" not in brief.hints:
        return [_interval(2, f"region is {status}: watch it every 2 s", ttl=60)]
    if status == "ok" and "interval 2s" in brief.hints:
        return [_interval(10, "region is ok again: every 10 s")]
    return []


def _processor(pending: Any, brief: Brief) -> list[Call]:
    if not isinstance(pending, int):
        return []
    if pending > 200 and "interval 3s" not in brief.hints:
        return [_interval(3, f"queue depth {pending} > 200: process every 3 s")]
    if pending < 50 and "interval 60s" not in brief.hints:
        return [_interval(60, f"queue depth {pending} < 50: process every minute")]
    return []


def _cleanup(forecast: Any, brief: Brief) -> list[Call]:
    if forecast == "over_budget" and "one-shot" not in brief.hints:
        return [_once_soon(brief, "projected spend is over budget: clean up now")]
    return []


def _look(reason: str, seconds: float) -> Callable[[Any, Brief], list[Call]]:
    """Relax to every `seconds` once, when `reason` says why (the value read)."""

    def decide(value: Any, brief: Brief) -> list[Call]:
        if value is None or f"interval {seconds:g}s" in brief.hints:
            return []
        return [_interval(seconds, f"{reason}: {value}")]

    return decide


def _slowing(latency: Any, brief: Brief) -> list[Call]:
    if isinstance(latency, float) and latency >= 600 and "interval 2s" not in brief.hints:
        return [_interval(2, f"latency {latency} ms and rising: watch every 2 s")]
    return []


def _quiet(signups: Any, brief: Brief) -> list[Call]:
    return _look("no sign-ups", 300)(signups, brief) if signups == 0 else []


def _stock_down(stock: Any, brief: Brief) -> list[Call]:
    return _look("stock is", 60)(stock, brief) if stock == "unavailable" else []


def _unchanging(rows: Any, brief: Brief) -> list[Call]:
    return _look("the same rows every time, only a timestamp and an id change", 60)(rows, brief)


NEEDS = {
    "flash-sale/investigator": Need("fraud_rate", _investigate, "fraud_score"),
    "etl/transform": Need("records", _transform, "fetch"),
    **{f"health/{region}": Need("status", _region) for region in ("eu", "us", "ap")},
    "queue/processor": Need("pending", _processor, "depth"),
    "billing/cleanup": Need("forecast", _cleanup, "usage"),
    "volatile/report": Need("rows", _unchanging),
    "degrading/api": Need("latency_ms", _slowing),
    "sibling-failing/orders": Need("stock", _stock_down),
    "quiet-night/signups": Need("signups_last_minute", _quiet),
}
"""What the scripted model reads and decides on each exam's endpoints (the flapping check
and the failing stock service are looked at and left alone)."""

USE_CASES = catalog.USE_CASES


@dataclass
class Story:
    """What a use case left behind: the open store to inspect, and the LLM's usage."""

    store: SqlStore
    usage: list[tuple[int, int]] = field(default_factory=list)
    analyses: int = 0


async def run_story(
    case: Exam, database_url: str, *, paste_latest: bool = False, seed: int = 7
) -> Story:
    """Sit `case`'s exam with the scripted model; the caller closes `Story.store`."""
    async with FakeOpenAI(policy(NEEDS)) as server:
        chat = OpenAIChat(
            model="scripted",
            base_url=server.base_url,
            api_key=None,
            timeout_seconds=10,
            attempts=2,
            sleep=asyncio.sleep,
            now=SystemClock().now,
        )
        kinds: Sequence[ToolKind] = (
            (ToolKind.ACTION, ToolKind.FINAL) if paste_latest else tuple(ToolKind)
        )
        analyst = LlmAnalyst(chat, max_steps=6, max_tokens=50_000, tool_kinds=tuple(kinds))
        config = replace(
            exam_config(planner_config(settings_for_tests())), paste_latest=paste_latest
        )
        try:
            sat = await sit(case, database_url, analyst, config, seed=seed)
        finally:
            await chat.close()
        story = Story(sat.store, list(server.usage))
    story.analyses = len(await story.store.planner.list_sessions(limit=10_000))
    return story
