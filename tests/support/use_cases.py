"""The five use cases as runnable stories: the simulator (on a fake clock), one scheduler pass
per simulated second (claims, real HTTP on 127.0.0.1, fenced finishes), and the LLM planner
through the real `openai` SDK against `FakeOpenAI`, whose policy plays a sensible model.

The policy reads only what the planner shows it: the prompt (with the newest responses summed
up, or with `paste_latest` pasted whole), and the tool results. Shared by the end-to-end tests
and by `bench/token_economy.py`, which runs the same stories twice.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from cronpilot.adapters.bootstrap import planner_config
from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
from cronpilot.adapters.jobs_file import parse_declarations
from cronpilot.adapters.llm.openai_client import OpenAIChat
from cronpilot.adapters.simulator import Simulator
from cronpilot.adapters.sql import SqlStore, open_sql_store, upgrade_database
from cronpilot.domain.ports import Store
from cronpilot.planner.session import LlmAnalyst
from cronpilot.planner.tools import ToolKind
from cronpilot.planner.worker import PlannerWorker
from cronpilot.scheduler.requests import request_for
from tests.support.clock import FakeClock
from tests.support.fake_openai_server import Call, Calls, FakeOpenAI, Request, submit, tool_results
from tests.support.finishing import finish_one
from tests.support.settings import limits_for_tests, settings_for_tests

START = datetime(2030, 3, 2, 9, 0, tzinfo=UTC)
LOOPBACK = ["127.0.0.1/32"]
LOOK_AGAIN_SECONDS = 4
# Stories change schedules often on purpose; the hourly limit is tested elsewhere.
LIMITS = limits_for_tests(max_changes_per_hour=100)

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
class UseCase:
    name: str
    jobs: str
    needs: dict[str, Need]
    """By analysed endpoint ref; endpoints not listed are looked at and left alone."""
    seconds: int = 62


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


def policy(case: UseCase) -> Callable[[Request], Calls]:
    """A model that takes the field it needs from the brief (the pasted responses, or the
    summary of the newest ones), else reads it, then decides, acts, and submits."""

    def reply(request: Request) -> Calls:
        brief = _brief(request)
        need = case.needs.get(brief.ref)
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
            return Calls([Call("get_response_history", read)])
        if reads:
            run = (results[0].get("runs") or [{}])[0]
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


USE_CASES = [
    UseCase(
        "flash-sale",
        """
jobs:
  - name: flash-sale
    planner_mode: auto
    endpoints:
      - {name: fraud_score, url: "${SIMULATOR_URL}/fraud/score", interval: 10s,
         min_interval: 5s, max_interval: 2m}
      - {name: investigator, url: "${SIMULATOR_URL}/fraud/investigate", method: POST,
         body: {max_orders: 5}, interval: 30s, min_interval: 10s, max_interval: 5m}
""",
        {"flash-sale/investigator": Need("fraud_rate", _investigate, "fraud_score")},
        seconds=70,
    ),
    UseCase(
        "etl",
        """
jobs:
  - name: etl
    planner_mode: auto
    endpoints:
      - {name: fetch, url: "${SIMULATOR_URL}/etl/fetch", interval: 5s, min_interval: 5s,
         max_interval: 1m}
      - {name: transform, url: "${SIMULATOR_URL}/etl/transform", interval: 10m,
         min_interval: 1s, max_interval: 1h}
""",
        {"etl/transform": Need("records", _transform, "fetch")},
    ),
    UseCase(
        "health",
        """
jobs:
  - name: health
    planner_mode: auto
    endpoints:
      - {name: eu, url: "${SIMULATOR_URL}/health/eu", interval: 5s, min_interval: 2s,
         max_interval: 30s}
      - {name: us, url: "${SIMULATOR_URL}/health/us", interval: 5s, min_interval: 2s,
         max_interval: 30s}
      - {name: ap, url: "${SIMULATOR_URL}/health/ap", interval: 5s, min_interval: 2s,
         max_interval: 30s}
""",
        {f"health/{region}": Need("status", _region) for region in ("eu", "us", "ap")},
    ),
    UseCase(
        "queue",
        """
jobs:
  - name: queue
    planner_mode: auto
    endpoints:
      - {name: depth, url: "${SIMULATOR_URL}/queue/depth", interval: 5s, min_interval: 2s,
         max_interval: 1m}
      - {name: processor, url: "${SIMULATOR_URL}/queue/process", method: POST,
         body: {batch_size: 100}, interval: 10s, min_interval: 3s, max_interval: 2m}
""",
        {"queue/processor": Need("pending", _processor, "depth")},
    ),
    UseCase(
        "billing",
        """
jobs:
  - name: billing
    planner_mode: auto
    endpoints:
      - {name: usage, url: "${SIMULATOR_URL}/billing/usage", interval: 15s, max_interval: 5m}
      - {name: cleanup, url: "${SIMULATOR_URL}/billing/cleanup", method: DELETE,
         interval: 30s, max_interval: 10m}
""",
        {"billing/cleanup": Need("forecast", _cleanup, "usage")},
    ),
]


@dataclass
class Story:
    """What a use case left behind: the open store to inspect, and the LLM's usage."""

    store: SqlStore
    usage: list[tuple[int, int]] = field(default_factory=list)
    analyses: int = 0


async def _scheduler_pass(store: Store, dispatcher: AiohttpDispatcher, now: datetime) -> None:
    """What a scheduler worker does when it wakes at `now`: claim what is due, call it, record."""
    claims = await store.claims.claim_due(now, "scheduler", 30, 100)
    responses = await asyncio.gather(*(dispatcher.dispatch(request_for(c)) for c in claims))
    for claim, response in zip(claims, responses, strict=True):
        await finish_one(store.claims, claim, "scheduler", response, now)


async def run_story(
    case: UseCase, database_url: str, *, paste_latest: bool = False, seed: int = 7
) -> Story:
    """Run `case` second by second; the caller closes `Story.store`."""
    clock = FakeClock(START)
    await upgrade_database(database_url)
    store = await open_sql_store(database_url)
    simulator = Simulator(seed=seed, cycle_seconds=60, now=clock.now)
    dispatcher = AiohttpDispatcher(allowed_networks=LOOPBACK)
    try:
        url = await simulator.start()
        declarations = parse_declarations(case.jobs, case.name, LOOPBACK, {"SIMULATOR_URL": url})
        await store.catalog.apply(declarations, clock.now())
        async with FakeOpenAI(policy(case)) as server:
            chat = OpenAIChat(
                model="scripted",
                base_url=server.base_url,
                api_key=None,
                timeout_seconds=10,
                attempts=2,
                sleep=clock.sleep,
            )
            kinds: Sequence[ToolKind] = (
                (ToolKind.ACTION, ToolKind.FINAL) if paste_latest else tuple(ToolKind)
            )
            planner = PlannerWorker(
                store,
                LlmAnalyst(chat, max_steps=6, max_tokens=50_000, tool_kinds=tuple(kinds)),
                clock,
                replace(
                    planner_config(
                        settings_for_tests(worker_id="planner", planner_min_look_again_seconds=1)
                    ),
                    paste_latest=paste_latest,
                    limits=LIMITS,
                ),
                waker=None,
            )
            try:
                for _ in range(case.seconds):
                    await _scheduler_pass(store, dispatcher, clock.now())
                    await planner.run_round()
                    clock.advance(1)
            finally:
                await chat.close()
            story = Story(store, list(server.usage))
        story.analyses = len(await store.planner.list_sessions(limit=10_000))
        return story
    except BaseException:
        await store.close()
        raise
    finally:
        await dispatcher.close()
        await simulator.stop()
