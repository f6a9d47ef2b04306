"""The jobs document as pydantic models, and a parsed document validated against them: each
error names its field. Checks across fields and endpoints are `checks`'."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    Field,
    ValidationError,
)

from cronpilot.adapters.jobs_file.fields import (
    ApprovalTimeout,
    Budget,
    CoolDown,
    Count,
    Duration,
    Jitter,
    Method,
    Name,
    PositiveDuration,
    RetryWait,
    Size,
    Strict,
    Watch,
    Window,
)
from cronpilot.adapters.jobs_file.limits import LimitConfig, LimitKey
from cronpilot.adapters.jobs_file.locations import Issue, Loc
from cronpilot.adapters.jobs_file.quiet import Quiet
from cronpilot.adapters.jobs_file.targets import TargetConfig
from cronpilot.adapters.rules_config import MAX_RULES, RuleConfig
from cronpilot.domain.alerts.notify_targets import (
    TargetKind,
)
from cronpilot.domain.model import (
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_PLANNER_MODE,
    DEFAULT_TIMEOUT_SECONDS,
    JSON,
    CatchUp,
    Objective,
    PlannerMode,
    RetryOn,
    RetryPolicy,
)
from cronpilot.domain.runs.retries import MAX_ATTEMPTS

_MAX_NOTIFY_URLS = 10
_MAX_NOTIFY_TARGETS = 10
_MAX_CHANGE_IGNORES = 100
_MAX_LIMITS = 1000


def _notify_shape(value: object) -> object:
    """`notify: [URL, …]` is short for `notify: {urls: [URL, …]}`."""
    if isinstance(value, list):
        return {"urls": value}
    if not isinstance(value, dict):
        raise ValueError(
            "expected a list of webhook URLs, or {urls: [...], targets: [...], after: N}"
        )
    return value


def _text(value: object) -> object:
    """`429` in YAML is a number; the retry kinds are names."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


class NotifyConfig(Strict):
    urls: list[str] | None = Field(default=None, max_length=_MAX_NOTIFY_URLS)
    targets: list[TargetConfig] | None = Field(default=None, max_length=_MAX_NOTIFY_TARGETS)
    after: Count | None = None
    missed_after: Watch | None = None
    late_after: Watch | None = None


Notify = Annotated[NotifyConfig, BeforeValidator(_notify_shape)]
_RETRY_DEFAULTS = RetryPolicy()


class RetryConfig(Strict):
    attempts: int = Field(default=_RETRY_DEFAULTS.attempts, ge=1, le=MAX_ATTEMPTS, strict=True)
    backoff: RetryWait = _RETRY_DEFAULTS.backoff_seconds
    max_backoff: RetryWait = _RETRY_DEFAULTS.max_backoff_seconds
    on: list[Annotated[RetryOn, BeforeValidator(_text)]] = Field(
        default_factory=lambda: list(RetryOn), min_length=1
    )
    unsafe: bool = False


OverlapPolicy = Literal["skip", "queue_one", "allow"]
"""`domain.model.Overlap`."""


class EndpointConfig(Strict):
    name: Name
    description: str = ""
    url: str
    method: Method = "GET"
    headers: dict[str, str] = Field(default_factory=dict)
    body: JSON = None
    cron: str | None = None
    timezone: str | None = None
    interval: Duration | None = None
    min_interval: Duration | None = None
    max_interval: Duration | None = None
    timeout: PositiveDuration = DEFAULT_TIMEOUT_SECONDS
    max_response_size: Size = DEFAULT_MAX_RESPONSE_BYTES
    planner_mode: PlannerMode | None = None
    depends_on: list[Name] = Field(default_factory=list)
    only_if_changed: bool = False
    conditional: bool | None = None
    run_if: str | None = None
    success_when: str | None = None
    approval: Literal["required"] | None = None
    approval_timeout: ApprovalTimeout | None = None
    change_ignores: list[str] = Field(default_factory=list, max_length=_MAX_CHANGE_IGNORES)
    notify: Notify | None = None
    pause_after: Count | None = None
    retry: RetryConfig | None = None
    accept_hints: bool = False
    dangerous: bool = False
    objective: Objective = Objective.FRESHNESS
    jitter: Jitter | None = None
    catch_up: CatchUp | None = None
    catch_up_window: Window | None = None
    overlap: OverlapPolicy | None = None
    rules: list[RuleConfig] = Field(default_factory=list, max_length=MAX_RULES)
    quiet: Quiet | None = None
    limit: LimitKey | None = None


class JobConfig(Strict):
    name: Name
    description: str = ""
    planner_mode: PlannerMode = DEFAULT_PLANNER_MODE
    rejection_cooldown: CoolDown | None = None
    budget: Budget | None = None
    notify: Notify | None = None
    pause_after: Count | None = None
    quiet: Quiet | None = None
    limit: LimitKey | None = None
    overlap: OverlapPolicy | None = None
    endpoints: list[EndpointConfig] = Field(min_length=1)


class ConfigDocument(Strict):
    limits: dict[LimitKey, LimitConfig] = Field(default_factory=dict, max_length=_MAX_LIMITS)
    jobs: list[JobConfig] = Field(min_length=1)


def validated(expanded: object) -> ConfigDocument:
    if not isinstance(expanded, dict):
        raise Issue((), "expected a mapping with a 'jobs' list")
    try:
        return ConfigDocument.model_validate(expanded)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        raise Issue(_untagged(tuple(error["loc"])), _pydantic_reason(error)) from exc


_TARGET_KINDS = ", ".join(kind.value for kind in TargetKind)


def _untagged(loc: Loc) -> Loc:
    """`loc` without the kind pydantic names after a target's position (`targets[0].slack.url`
    is the file's `targets[0].url`)."""
    return tuple(
        part
        for i, part in enumerate(loc)
        if not (i >= 2 and loc[i - 2] == "targets" and part in set(TargetKind))
    )


def _pydantic_reason(error: Mapping[str, Any]) -> str:
    if error["type"] == "extra_forbidden":
        return "unknown field"
    if error["type"] in ("union_tag_not_found", "union_tag_invalid"):
        return f"set kind to one of {_TARGET_KINDS}"
    if error["type"] == "value_error":
        return str(error["ctx"]["error"])
    return str(error["msg"])
