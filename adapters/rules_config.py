"""Response rules as a jobs file writes them (decision 0026)::

    rules:
      - when: 'fraud_score.body.fraud_rate > 0.05'
        then: resume
      - when: 'true'
        then: {pause: {for: 10m}}
        for: 30s        # held on every pass for 30 s before it fires
        dwell: 5m       # the last rule-made change stands 5 min before this rule replaces it

`then` is one action: `run_now`, `resume` or `baseline` as a word, `{interval: 30s}` (with an
optional `ttl: 1h`) or `{pause: {for: 10m}}`. `when` is a CEL condition, compiled and checked
with the endpoint's other conditions. `for`, `dwell` and `urgent: true` (no dwell, no hourly
limit) damp it (decision 0032).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainValidator

from cronpilot.adapters.durations import parse_duration
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.model import EndpointSpec
from cronpilot.domain.rules.rules import ActionKind, Rule, RuleAction
from cronpilot.domain.runs.excerpt import excerpt
from cronpilot.domain.schedule.pauses import pause_length

MAX_RULES = 50
MAX_WAIT_SECONDS = 86_400.0
"""The longest `for` and `dwell`: a day."""
_WORDS = (ActionKind.RUN_NOW, ActionKind.RESUME, ActionKind.BASELINE)
_ACTIONS = ", ".join(kind.value for kind in ActionKind)
_INTERVAL_EXAMPLE = "then: {interval: 30s, ttl: 1h}"
_PAUSE_EXAMPLE = "then: {pause: {for: 10m}}"


def _positive(value: object, what: str) -> float:
    seconds = parse_duration(value)
    if seconds <= 0:
        raise ValueError(f"{what} must be positive")
    return seconds


def _unknown(name: object) -> ValueError:
    return ValueError(f"unknown action {excerpt(repr(name))}; the actions are {_ACTIONS}")


def parse_then(value: object) -> RuleAction:
    """A rule's action from its `then`; raises `ValueError` naming what is wrong."""
    if isinstance(value, str):
        if value in _WORDS:
            return RuleAction(ActionKind(value))
        if value == ActionKind.INTERVAL:
            raise ValueError(f"interval needs a duration: {_INTERVAL_EXAMPLE}")
        if value == ActionKind.PAUSE:
            raise ValueError(f"pause needs how long: {_PAUSE_EXAMPLE}")
        raise _unknown(value)
    if not isinstance(value, Mapping) or not value:
        raise ValueError(f"expected an action ({_ACTIONS})")
    if ActionKind.INTERVAL in value:
        return _interval(value)
    if ActionKind.PAUSE in value:
        return _pause(value)
    name = next(iter(value))
    if name in _WORDS:
        raise ValueError(f"{name} takes no argument: then: {name}")
    raise _unknown(name)


def _interval(value: Mapping[object, object]) -> RuleAction:
    extra = set(value) - {ActionKind.INTERVAL.value, "ttl"}
    if extra:
        raise ValueError(f"interval takes ttl only, not {excerpt(repr(sorted(map(str, extra))))}")
    interval = _positive(value[ActionKind.INTERVAL.value], "interval")
    ttl = value.get("ttl")
    return RuleAction(
        ActionKind.INTERVAL,
        interval_seconds=interval,
        ttl_seconds=None if ttl is None else _positive(ttl, "ttl"),
    )


def _pause(value: Mapping[object, object]) -> RuleAction:
    arguments = value[ActionKind.PAUSE.value]
    if len(value) != 1 or not isinstance(arguments, Mapping) or set(arguments) != {"for"}:
        raise ValueError(f"pause needs how long, and nothing else: {_PAUSE_EXAMPLE}")
    seconds = _positive(arguments["for"], "pause for")
    try:
        # Bounded as any pause: a rule's pause ends `for` after it fires.
        pause_length(seconds, "pause for")
    except InvalidConfig as error:
        raise ValueError(str(error)) from None
    return RuleAction(ActionKind.PAUSE, for_seconds=seconds)


Wait = Annotated[float, BeforeValidator(parse_duration), Field(ge=0, le=MAX_WAIT_SECONDS)]
"""`for` and `dwell`: a duration from none to a day."""


class RuleConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    when: Annotated[str, Field(min_length=1)]
    then: Annotated[RuleAction, PlainValidator(parse_then)]
    holds_for: Annotated[Wait, Field(alias="for")] = 0.0
    dwell: Wait | None = None
    urgent: Annotated[bool, Field(strict=True)] = False

    def rule(self) -> Rule:
        return Rule(
            self.when,
            self.then,
            for_seconds=self.holds_for,
            dwell_seconds=self.dwell,
            urgent=self.urgent,
        )


def schedule_problem(action: RuleAction, spec: EndpointSpec) -> str | None:
    """Why the guardrails would refuse `action` on `spec` every time, or None: said at apply
    rather than at every firing."""
    moves = action.kind in (ActionKind.INTERVAL, ActionKind.RUN_NOW)
    if moves and spec.schedule.after_upstreams:
        return (
            f"{action.kind.value} moves a schedule, and an endpoint with depends_on runs after "
            "its upstreams"
        )
    interval = action.interval_seconds
    if interval is None:
        return None
    if interval < spec.floor_seconds:
        return f"interval {interval:g}s is below the floor {spec.floor_seconds:g}s"
    low, high = spec.min_interval_seconds, spec.max_interval_seconds
    if low is not None and interval < low:
        return f"interval {interval:g}s is below min_interval {low:g}s"
    if high is not None and interval > high:
        return f"interval {interval:g}s is above max_interval {high:g}s"
    return None
