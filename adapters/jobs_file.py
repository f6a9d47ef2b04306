"""The declarative `jobs.yaml`: parsed, expanded and validated completely before anything is
written, so `apply` is all-or-nothing.

Shape::

    jobs:
      - name: etl
        description: nightly pipeline
        planner_mode: review          # off | review | auto | graded (the default)
        rejection_cooldown: 2h        # a rejected change is not proposed again for 2h
        endpoints:
          - name: fetch
            url: ${SIMULATOR_URL}/etl/fetch
            interval: 30s             # or: cron: "*/5 * * * *" (+ timezone: Europe/Paris)
            min_interval: 10s
            max_interval: 1h
            jitter: 5s                # spread calls over [slot, slot + 5s)
            catch_up: one             # or none; after downtime (window: catch_up_window)
            headers: {Authorization: "Bearer ${ETL_TOKEN}"}
            notify: {urls: ["${ALERTS_URL}"], after: 5}   # or a plain list of URLs
            # also: missed_after: 10m (no run that long past a due slot), late_after: 30s
            # notify.targets: slack, teams, pagerduty, email, webhook (docs/notify-targets.md)
            pause_after: 20
            retry: {attempts: 3, backoff: 1s, max_backoff: 30s, on: [timeout, connect, 5xx, 429]}
            accept_hints: true        # take the Cronpilot-Next-Run answer header as a hint
            dangerous: true           # run_now/next_time proposals always wait for review
            success_when: 'body.status == "ok"'   # a condition (CEL) on the response
            change_ignores: [checked_at, meta.request_id]   # not a change of the answer
            rules:                    # the first that holds proposes (adapters.rules_config)
              - {when: 'body.records > 1000', then: {interval: 10s, ttl: 1h}}
          - name: load                # a DAG dependant: runs after fetch
            depends_on: [fetch]
            run_if: 'fetch.body.records > 0'      # a condition on the parents' responses
            approval: required        # ...once an admin approves
            approval_timeout: 2h      # expired (skipped) after that; default 1h

`${NAME}` in any string value is replaced by the environment variable NAME; an unset variable
is an error, never an empty string. Durations are seconds or strings such as `250ms`, `30s`,
`5m`, `1h30m`, `1d`; sizes are bytes or strings such as `100KB`, `2MiB`. Unknown fields are
errors, so a misspelt (or not yet supported) option never goes unnoticed. Everything that
would fail later (a header that could split a request, a body PostgreSQL cannot store) is
refused here, so that SQLite and PostgreSQL accept exactly the same files.

Alerts (`notify`, `pause_after`) may be set on a job for all its endpoints; an endpoint's own
`notify.urls`, `notify.after` and `pause_after` each replace the job's (`notify: []` silences
one endpoint of a job that notifies), and so do `notify.missed_after` and `notify.late_after`
(`domain.watch`; scheduled endpoints only). Webhook URLs pass the same address guard as endpoint
URLs. `notify.targets` (`domain.notify_targets`) lists targets of a kind, each with the `events`
it receives (all by default); an endpoint's own list replaces the job's. Every target URL and
SMTP host passes the guard too; a refused secret URL (Slack's, Teams') is never quoted back.
"""

from __future__ import annotations

import itertools
import math
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
)

from cronpilot.adapters.durations import parse_duration
from cronpilot.adapters.http.guard import check_url
from cronpilot.adapters.jsonvalue import check_storable
from cronpilot.adapters.rules_config import MAX_RULES, RuleConfig, schedule_problem
from cronpilot.adapters.settings import FLOOR_VARIABLE
from cronpilot.domain.alerts import AlertEvent
from cronpilot.domain.approvals import (
    DEFAULT_APPROVAL_TIMEOUT_SECONDS,
    MAX_APPROVAL_TIMEOUT_SECONDS,
)
from cronpilot.domain.dependencies import with_dependants
from cronpilot.domain.errors import CronpilotError, InvalidConfig, InvalidDependency, UnsafeURL
from cronpilot.domain.excerpt import excerpt
from cronpilot.domain.field_paths import FieldPathError, canonical, parse_field_path
from cronpilot.domain.model import (
    DEFAULT_CATCH_UP_WINDOW_SECONDS,
    DEFAULT_FLOOR_SECONDS,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_NOTIFY_AFTER,
    DEFAULT_PLANNER_MODE,
    DEFAULT_TIMEOUT_SECONDS,
    JSON,
    CatchUp,
    EndpointSpec,
    Job,
    PlannerMode,
    RetryOn,
    RetryPolicy,
    Schedule,
)
from cronpilot.domain.notify_targets import (
    DEFAULT_SMTP_PORT,
    PAGERDUTY_EVENTS_URL,
    NotifyTarget,
    SmtpServer,
    TargetKind,
)
from cronpilot.domain.ports import JobDeclaration
from cronpilot.domain.retries import MAX_ATTEMPTS, may_repeat
from cronpilot.domain.schedule import MAX_SECONDS, validate_schedule, zone
from cronpilot.domain.secrets import mask_urls
from cronpilot.domain.spacing import shortest_gap

Loc = tuple[str | int, ...]

_ENV_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*(b|kb|mb|kib|mib)?", re.IGNORECASE)
_SIZE_UNITS = {"b": 1, "kb": 1000, "mb": 1000**2, "kib": 1024, "mib": 1024**2}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
"""An HTTP token (RFC 9110): anything else is not a header name, or smuggles a second one."""
_UNSENDABLE = re.compile("[\x00-\x08\x0a-\x1f\x7f\ud800-\udfff]")
"""Control characters but tab (CR/LF would end a request or header line) and lone surrogates
(not text), refused in header values and URLs."""
_MAX_NOTIFY_URLS = 10
_MAX_NOTIFY_TARGETS = 10
_MAX_RECIPIENTS = 50
_MAIL_ADDRESS = re.compile(r"[^@\s<>,;\"]+@[^@\s<>,;\"]+")
_MAX_CHANGE_IGNORES = 100
_MAX_COUNT = 1_000_000
"""Bound on failure counts (`notify.after`, `pause_after`): a database integer holds it."""
_MAX_DEPTH = 64
_MAX_VALUES = 100_000
"""Bounds on a document, so that nested YAML aliases cannot expand into billions of values."""
MAX_FILE_BYTES = 10 * 1000**2
"""A jobs file is read up to this size and refused beyond: `-f /dev/zero` must not fill memory."""
MAX_RESPONSE_SIZE = 1024**3
"""1 GiB: more than a worker should hold in memory for one answer, and within the INTEGER
column of every store (PostgreSQL's holds less than 2 GiB, SQLite's overflows past 2**63)."""


def parse_size(value: object) -> int:
    """Bytes from a number or a size string; raises `ValueError` for anything else."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and (match := _SIZE.fullmatch(value.strip())):
        amount, unit = match.groups()
        size = float(amount) * _SIZE_UNITS[(unit or "b").lower()]
        # So many digits that the float is infinite: no integer to make of it.
        if math.isfinite(size):
            return int(size)
    raise ValueError(f"{excerpt(repr(value))} is not a size (bytes, or e.g. '100KB', '2MiB')")


def _check_name(value: object) -> object:
    if isinstance(value, str) and not _NAME.fullmatch(value):
        raise ValueError(
            "names are letters, digits, '-', '_' and '.' (at most 100), starting with a "
            "letter or digit"
        )
    return value


def _window(value: object) -> float:
    """A duration of 0 or more; `-1s` is refused as negative rather than as not a duration."""
    if isinstance(value, str) and value.strip().startswith("-"):
        raise ValueError("must be 0 or more (0: no missed slot is run late)")
    return parse_duration(value)


def _positive_duration(value: object) -> float:
    """A duration above 0; `-5m` and `0s` are refused as such rather than as not a duration."""
    if isinstance(value, str) and value.strip().startswith("-"):
        raise ValueError("must be more than 0, e.g. '10m'")
    seconds = parse_duration(value)
    if seconds <= 0:
        raise ValueError("must be more than 0, e.g. '10m'")
    return seconds


def _upper(value: object) -> object:
    return value.upper() if isinstance(value, str) else value


def _not_bool(value: object) -> object:
    # pydantic reads `true` as 1 for an int: a count written as a boolean is a mistake.
    if isinstance(value, bool):
        raise ValueError("expected a whole number, not true/false")
    return value


def _notify_shape(value: object) -> object:
    """`notify: [URL, …]` is short for `notify: {urls: [URL, …]}`."""
    if isinstance(value, list):
        return {"urls": value}
    if not isinstance(value, dict):
        raise ValueError(
            "expected a list of webhook URLs, or {urls: [...], targets: [...], after: N}"
        )
    return value


def _event_name(value: str) -> str:
    """An event a target receives: any kind of alert cronpilot raises (`AlertEvent`)."""
    known = [event.value for event in AlertEvent]
    if value not in known:
        raise ValueError(f"unknown event {excerpt(repr(value))}; one of {', '.join(known)}")
    return value


def _mail_address(value: str) -> str:
    if not _MAIL_ADDRESS.fullmatch(value):
        raise ValueError(f"{excerpt(repr(value))} is not an e-mail address (name@domain)")
    return value


def _retry_wait(seconds: float) -> float:
    """A retry's wait is bounded like an interval: a retry never starts after its endpoint's
    next slot, and no schedule's slots are further apart, so a longer wait is a mistake (and
    `now + wait` would leave the calendar)."""
    if seconds > MAX_SECONDS:
        raise ValueError(
            f"must be at most {MAX_SECONDS / 86400:.0f}d, the longest time between two slots"
        )
    return seconds


def _approval_timeout(seconds: float) -> float:
    if seconds > MAX_APPROVAL_TIMEOUT_SECONDS:
        raise ValueError(
            f"must be at most {MAX_APPROVAL_TIMEOUT_SECONDS / 86400:.0f}d: a request filled "
            "from upstream answers that old is stale"
        )
    return seconds


def _text(value: object) -> object:
    """`429` in YAML is a number; the retry kinds are names."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


Name = Annotated[str, BeforeValidator(_check_name)]
Duration = Annotated[float, BeforeValidator(parse_duration)]
PositiveDuration = Annotated[Duration, Field(gt=0)]
Size = Annotated[int, BeforeValidator(parse_size), Field(gt=0, le=MAX_RESPONSE_SIZE)]
Count = Annotated[int, BeforeValidator(_not_bool), Field(ge=1, le=_MAX_COUNT)]
Jitter = Annotated[Duration, Field(gt=0, le=MAX_SECONDS)]
RetryWait = Annotated[PositiveDuration, AfterValidator(_retry_wait)]
Window = Annotated[float, BeforeValidator(_window), Field(ge=0, le=MAX_SECONDS)]
CoolDown = Annotated[Duration, Field(ge=0, le=MAX_SECONDS)]
ApprovalTimeout = Annotated[PositiveDuration, AfterValidator(_approval_timeout)]
Watch = Annotated[float, BeforeValidator(_positive_duration), Field(le=MAX_SECONDS)]
Method = Annotated[
    Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"], BeforeValidator(_upper)
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


EventName = Annotated[str, AfterValidator(_event_name)]
MailAddress = Annotated[str, AfterValidator(_mail_address)]


class _TargetConfig(_Strict):
    events: list[EventName] = Field(default_factory=list)
    """Empty: every event."""


class WebhookTargetConfig(_TargetConfig):
    kind: Literal["webhook"]
    url: str

    def target(self) -> NotifyTarget:
        return NotifyTarget(TargetKind.WEBHOOK, url=self.url, events=tuple(self.events))


class SlackTargetConfig(_TargetConfig):
    kind: Literal["slack"]
    url: str

    def target(self) -> NotifyTarget:
        return NotifyTarget(TargetKind.SLACK, url=self.url, events=tuple(self.events))


class TeamsTargetConfig(_TargetConfig):
    kind: Literal["teams"]
    url: str

    def target(self) -> NotifyTarget:
        return NotifyTarget(TargetKind.TEAMS, url=self.url, events=tuple(self.events))


class PagerDutyTargetConfig(_TargetConfig):
    kind: Literal["pagerduty"]
    routing_key: str = Field(min_length=1)
    url: str = PAGERDUTY_EVENTS_URL

    def target(self) -> NotifyTarget:
        return NotifyTarget(
            TargetKind.PAGERDUTY,
            url=self.url,
            routing_key=self.routing_key,
            events=tuple(self.events),
        )


class EmailTargetConfig(_TargetConfig):
    kind: Literal["email"]
    host: str = Field(min_length=1)
    port: int = Field(default=DEFAULT_SMTP_PORT, ge=1, le=65535, strict=True)
    sender: MailAddress = Field(alias="from")
    to: list[MailAddress] = Field(min_length=1, max_length=_MAX_RECIPIENTS)
    starttls: bool = False
    username: str | None = None
    password: str | None = None

    def target(self) -> NotifyTarget:
        smtp = SmtpServer(
            host=self.host,
            port=self.port,
            sender=self.sender,
            to=tuple(self.to),
            starttls=self.starttls,
            username=self.username,
            password=self.password,
        )
        return NotifyTarget(TargetKind.EMAIL, events=tuple(self.events), smtp=smtp)


TargetConfig = Annotated[
    WebhookTargetConfig
    | SlackTargetConfig
    | TeamsTargetConfig
    | PagerDutyTargetConfig
    | EmailTargetConfig,
    Field(discriminator="kind"),
]


class NotifyConfig(_Strict):
    urls: list[str] | None = Field(default=None, max_length=_MAX_NOTIFY_URLS)
    targets: list[TargetConfig] | None = Field(default=None, max_length=_MAX_NOTIFY_TARGETS)
    after: Count | None = None
    missed_after: Watch | None = None
    late_after: Watch | None = None


Notify = Annotated[NotifyConfig, BeforeValidator(_notify_shape)]
_RETRY_DEFAULTS = RetryPolicy()


class RetryConfig(_Strict):
    attempts: int = Field(default=_RETRY_DEFAULTS.attempts, ge=1, le=MAX_ATTEMPTS, strict=True)
    backoff: RetryWait = _RETRY_DEFAULTS.backoff_seconds
    max_backoff: RetryWait = _RETRY_DEFAULTS.max_backoff_seconds
    on: list[Annotated[RetryOn, BeforeValidator(_text)]] = Field(
        default_factory=lambda: list(RetryOn), min_length=1
    )
    unsafe: bool = False


class EndpointConfig(_Strict):
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
    jitter: Jitter | None = None
    catch_up: CatchUp | None = None
    catch_up_window: Window | None = None
    rules: list[RuleConfig] = Field(default_factory=list, max_length=MAX_RULES)


class JobConfig(_Strict):
    name: Name
    description: str = ""
    planner_mode: PlannerMode = DEFAULT_PLANNER_MODE
    rejection_cooldown: CoolDown | None = None
    notify: Notify | None = None
    pause_after: Count | None = None
    endpoints: list[EndpointConfig] = Field(min_length=1)


class ConfigDocument(_Strict):
    jobs: list[JobConfig] = Field(min_length=1)


class _Issue(Exception):
    """A problem at a location in the document, turned into one `InvalidConfig` line."""

    def __init__(self, loc: Loc, reason: str) -> None:
        super().__init__(reason)
        self.loc = loc
        self.reason = reason


class _Loader(yaml.SafeLoader):
    """YAML with YAML 1.2 booleans (`planner_mode: off` stays the string "off") and without
    timestamps (`since: 2024-01-01` in a body stays a string, as JSON has no dates), that
    refuses duplicate keys instead of silently keeping the last one."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[str] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str):
                continue
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {excerpt(repr(key))}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        try:
            return super().construct_yaml_int(node)
        except ValueError as exc:
            # Python converts at most so many decimal digits (conversion is quadratic).
            limit = sys.get_int_max_str_digits()
            raise yaml.constructor.ConstructorError(
                None, None, f"an integer of more than {limit:,} digits", node.start_mark
            ) from exc


_NOT_RESOLVED = frozenset({"tag:yaml.org,2002:bool", "tag:yaml.org,2002:timestamp"})
_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in _NOT_RESOLVED]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)


def example_jobs_file() -> Path:
    """The bundled example used by the demo and the docs."""
    return Path(__file__).with_name("examples") / "jobs.yaml"


def load_declarations(
    path: Path,
    allowed_networks: Sequence[str],
    env: Mapping[str, str] | None = None,
    floor_seconds: float = DEFAULT_FLOOR_SECONDS,
) -> list[JobDeclaration]:
    """Read and validate `path`; raises `InvalidConfig` with one line naming the problem."""
    try:
        # One byte past the limit tells a file that is too large from one that just fits,
        # without reading an endless one (a device, a pipe) to its end.
        with path.open("rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise InvalidConfig(str(path), f"cannot read: {exc.strerror or exc}") from exc
    if len(data) > MAX_FILE_BYTES:
        raise InvalidConfig(str(path), f"larger than {MAX_FILE_BYTES:,} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidConfig(str(path), f"cannot read: {exc}") from exc
    return parse_declarations(text, str(path), allowed_networks, env, floor_seconds)


def parse_declarations(
    text: str,
    source: str,
    allowed_networks: Sequence[str],
    env: Mapping[str, str] | None = None,
    floor_seconds: float = DEFAULT_FLOOR_SECONDS,
) -> list[JobDeclaration]:
    """Validate a jobs document named `source` (for messages); `env` defaults to os.environ.
    Every endpoint is checked against, and stamped with, the floor (`FLOOR_VARIABLE`)."""
    raw = _read_yaml(text, source)
    try:
        expanded = _expand(raw, os.environ if env is None else env)
        document = _validated(expanded)
        _refuse_duplicates([job.name for job in document.jobs], ("jobs",), "job")
        return [
            _declaration(job, i, allowed_networks, floor_seconds)
            for i, job in enumerate(document.jobs)
        ]
    except _Issue as issue:
        raise InvalidConfig(_where(source, issue.loc, raw), issue.reason) from issue.__cause__


def _read_yaml(text: str, source: str) -> object:
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        raise InvalidConfig(where, f"YAML syntax error: {exc.problem or exc.context}") from exc
    except yaml.YAMLError as exc:
        raise InvalidConfig(source, f"YAML syntax error: {exc}") from exc
    except RecursionError as exc:
        raise InvalidConfig(source, "nested too deeply") from exc


def _expand(raw: object, env: Mapping[str, str]) -> object:
    """`raw` with `${NAME}` replaced in every string. The result is a fresh tree: values that
    YAML aliases share (or that an alias makes cyclic) are copied and counted, within bounds."""
    counter = itertools.count(1)

    def walk(value: object, loc: Loc) -> object:
        if next(counter) > _MAX_VALUES:
            raise _Issue((), f"more than {_MAX_VALUES} values (nested YAML aliases?)")
        if len(loc) > _MAX_DEPTH:
            raise _Issue(loc[:6], f"nested more than {_MAX_DEPTH} levels deep")
        if isinstance(value, str):
            return _ENV_VAR.sub(lambda match: _variable(match.group(1), env, loc), value)
        if isinstance(value, dict):
            return {key: walk(item, (*loc, key)) for key, item in value.items()}
        if isinstance(value, list):
            return [walk(item, (*loc, i)) for i, item in enumerate(value)]
        return value

    return walk(raw, ())


def _variable(name: str, env: Mapping[str, str], loc: Loc) -> str:
    if name not in env:
        raise _Issue(loc, f"environment variable {excerpt(name)} is not set")
    return env[name]


def _validated(expanded: object) -> ConfigDocument:
    if not isinstance(expanded, dict):
        raise _Issue((), "expected a mapping with a 'jobs' list")
    try:
        return ConfigDocument.model_validate(expanded)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        raise _Issue(_untagged(tuple(error["loc"])), _pydantic_reason(error)) from exc


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


def _declaration(
    job: JobConfig, index: int, allowed_networks: Sequence[str], floor_seconds: float
) -> JobDeclaration:
    _refuse_duplicates([e.name for e in job.endpoints], ("jobs", index, "endpoints"), "endpoint")
    _check_storable(("jobs", index, "description"), job.description)
    _check_notify(job.notify, ("jobs", index, "notify"), allowed_networks)
    specs = [
        _spec(endpoint, ("jobs", index, "endpoints", i), allowed_networks, job, floor_seconds)
        for i, endpoint in enumerate(job.endpoints)
    ]
    try:
        specs = with_dependants(specs)
    except InvalidDependency as problem:
        raise _Issue(
            ("jobs", index, "endpoints", problem.index, problem.field), problem.reason
        ) from problem
    return JobDeclaration(
        job=Job(
            name=job.name,
            description=job.description,
            planner_mode=job.planner_mode,
            rejection_cooldown_seconds=job.rejection_cooldown,
        ),
        endpoints=specs,
    )


def _refuse_duplicates(names: Sequence[str], loc: Loc, what: str) -> None:
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name in seen:
            raise _Issue((*loc, i, "name"), f"duplicate {what} name {name!r}")
        seen.add(name)


def _spec(
    endpoint: EndpointConfig,
    loc: Loc,
    allowed_networks: Sequence[str],
    job: JobConfig,
    floor_seconds: float,
) -> EndpointSpec:
    if endpoint.depends_on:
        schedule = _dependant_schedule(endpoint, loc)
    else:
        schedule = _schedule(endpoint, loc)
        _check_spacing(endpoint, schedule, loc, floor_seconds)
    _check_url((*loc, "url"), endpoint.url, allowed_networks)
    _check_notify(endpoint.notify, (*loc, "notify"), allowed_networks)
    _check_watch(job, endpoint, loc)
    _check_headers(endpoint.headers, (*loc, "headers"))
    _check_storable((*loc, "body"), endpoint.body)
    _check_storable((*loc, "description"), endpoint.description)
    for name in ("run_if", "success_when"):
        _check_storable((*loc, name), getattr(endpoint, name))
    spec = EndpointSpec(
        name=endpoint.name,
        url=endpoint.url,
        schedule=schedule,
        description=endpoint.description,
        method=endpoint.method,
        headers=dict(endpoint.headers),
        body=endpoint.body,
        min_interval_seconds=endpoint.min_interval,
        max_interval_seconds=endpoint.max_interval,
        timeout_seconds=endpoint.timeout,
        max_response_bytes=endpoint.max_response_size,
        planner_mode=endpoint.planner_mode,
        depends_on=tuple(endpoint.depends_on),
        only_if_changed=endpoint.only_if_changed,
        run_if=endpoint.run_if,
        success_when=endpoint.success_when,
        approval_timeout_seconds=_approval(endpoint, loc),
        change_ignores=_change_ignores(endpoint.change_ignores, (*loc, "change_ignores")),
        **_alert_settings(job, endpoint),
        retry=_retry_policy(endpoint, (*loc, "retry")),
        accept_hints=endpoint.accept_hints,
        dangerous=endpoint.dangerous,
        jitter_seconds=endpoint.jitter,
        catch_up=endpoint.catch_up or CatchUp.ONE,
        catch_up_window_seconds=(
            DEFAULT_CATCH_UP_WINDOW_SECONDS
            if endpoint.catch_up_window is None
            else endpoint.catch_up_window
        ),
        floor_seconds=floor_seconds,
        rules=tuple(rule.rule() for rule in endpoint.rules),
    )
    for i, rule in enumerate(spec.rules):
        _check_storable((*loc, "rules", i, "when"), rule.when)
        problem = schedule_problem(rule.then, spec)
        if problem is not None:
            raise _Issue((*loc, "rules", i, "then"), problem)
    return spec


def _approval(endpoint: EndpointConfig, loc: Loc) -> float | None:
    """How long the endpoint waits for an admin's approval in each DAG run; None: it needs
    none. A root endpoint has no DAG run to wait in (its `approval` is refused with its
    schedule, `_schedule`)."""
    if endpoint.approval is None:
        if endpoint.approval_timeout is not None:
            raise _Issue((*loc, "approval_timeout"), "applies with approval: required only")
        return None
    if endpoint.approval_timeout is None:
        return DEFAULT_APPROVAL_TIMEOUT_SECONDS
    return endpoint.approval_timeout


def _change_ignores(paths: Sequence[str], loc: Loc) -> tuple[str, ...]:
    """The paths written the one way (`rows.0.id` is kept as `rows[0].id`)."""
    written: list[str] = []
    for i, path in enumerate(paths):
        try:
            one_way = canonical(parse_field_path(path))
        except FieldPathError as exc:
            raise _Issue((*loc, i), str(exc)) from exc
        if one_way in written:
            raise _Issue((*loc, i), f"{one_way} is listed twice")
        written.append(one_way)
    return tuple(written)


def _check_url(loc: Loc, url: str, allowed_networks: Sequence[str]) -> None:
    if found := _UNSENDABLE.search(url):
        raise _Issue(loc, f"holds U+{ord(found.group()):04X}; percent-encode it")
    _check(loc, lambda: check_url(url, allowed_networks))


def _check_notify(notify: NotifyConfig | None, loc: Loc, allowed_networks: Sequence[str]) -> None:
    """Webhook URLs are called like endpoints, so they pass the same guard, and each once."""
    urls = notify.urls if notify is not None and notify.urls is not None else []
    seen: set[str] = set()
    for i, url in enumerate(urls):
        _check_url((*loc, "urls", i), url, allowed_networks)
        if url in seen:
            raise _Issue((*loc, "urls", i), "this webhook URL is listed twice")
        seen.add(url)
    targets = notify.targets if notify is not None and notify.targets is not None else []
    made: list[NotifyTarget] = []
    for i, config in enumerate(targets):
        _check_target(config, (*loc, "targets", i), allowed_networks)
        target = config.target()
        if target in made:
            raise _Issue((*loc, "targets", i), "this target is listed twice")
        made.append(target)


def _check_target(config: TargetConfig, loc: Loc, allowed_networks: Sequence[str]) -> None:
    """A target's URL or SMTP host passes the address guard. A Slack or Teams URL is its
    credential: a refusal gives the reason only, never the URL."""
    if isinstance(config, EmailTargetConfig):
        host = f"[{config.host}]" if ":" in config.host else config.host
        _check_secret_url((*loc, "host"), f"http://{host}:{config.port}/", allowed_networks)
        if (config.username is None) != (config.password is None):
            raise _Issue((*loc, "username"), "set both username and password, or neither")
        for i, value in enumerate(config.to):
            _check_storable((*loc, "to", i), value)
    elif isinstance(config, WebhookTargetConfig):
        _check_url((*loc, "url"), config.url, allowed_networks)
    else:
        _check_secret_url((*loc, "url"), config.url, allowed_networks)


def _check_secret_url(loc: Loc, url: str, allowed_networks: Sequence[str]) -> None:
    if _UNSENDABLE.search(url):
        raise _Issue(loc, "holds a control character; percent-encode it")
    try:
        check_url(url, allowed_networks)
    except UnsafeURL as refused:
        raise _Issue(loc, f"refused by the address guard: {refused.reason}") from refused


def _alert_settings(job: JobConfig, endpoint: EndpointConfig) -> dict[str, Any]:
    """`notify`, `notify_targets`, `notify_after` and `pause_after` of the spec: each that the
    endpoint sets replaces the job's, the others come from the job."""
    mine, jobs = endpoint.notify or NotifyConfig(), job.notify or NotifyConfig()
    urls = mine.urls if mine.urls is not None else jobs.urls
    targets = mine.targets if mine.targets is not None else jobs.targets
    return {
        "notify": tuple(urls or ()),
        "notify_targets": tuple(config.target() for config in targets or ()),
        "notify_after": mine.after or jobs.after or DEFAULT_NOTIFY_AFTER,
        "pause_after": endpoint.pause_after or job.pause_after,
        # A job's watch skips its DAG dependants: they have no slots (`_check_watch`).
        "missed_after_seconds": _watched(mine.missed_after, jobs.missed_after, endpoint),
        "late_after_seconds": _watched(mine.late_after, jobs.late_after, endpoint),
    }


def _watched(mine: float | None, jobs: float | None, endpoint: EndpointConfig) -> float | None:
    if endpoint.depends_on:
        return None
    return mine if mine is not None else jobs


def _check_watch(job: JobConfig, endpoint: EndpointConfig, loc: Loc) -> None:
    """`missed_after` and `late_after` watch a schedule's slots: an endpoint's own on a DAG
    dependant (which has none) is refused, a job's skips its dependants; a late run is one that
    starts later than its jitter can make it."""
    mine = endpoint.notify or NotifyConfig()
    if endpoint.depends_on:
        for name in ("missed_after", "late_after"):
            if getattr(mine, name) is not None:
                raise _Issue(
                    (*loc, "notify", name),
                    "an endpoint with depends_on has no slots to miss: it runs after its upstreams",
                )
        return
    late = _watched(mine.late_after, (job.notify or NotifyConfig()).late_after, endpoint)
    if late is not None and endpoint.jitter is not None and late <= endpoint.jitter:
        where = (*loc, "notify", "late_after") if mine.late_after is not None else (*loc, "jitter")
        raise _Issue(
            where,
            f"late_after ({late:g}s) must be more than the jitter ({endpoint.jitter:g}s), "
            "which delays calls on purpose",
        )


def _retry_policy(endpoint: EndpointConfig, loc: Loc) -> RetryPolicy | None:
    retry = endpoint.retry
    if retry is None:
        return None
    if retry.max_backoff < retry.backoff:
        raise _Issue((*loc, "max_backoff"), f"must be at least backoff ({retry.backoff:g}s)")
    policy = RetryPolicy(
        attempts=retry.attempts,
        backoff_seconds=retry.backoff,
        max_backoff_seconds=retry.max_backoff,
        on=tuple(dict.fromkeys(retry.on)),
        unsafe=retry.unsafe,
    )
    if policy.attempts > 1 and not may_repeat(policy, endpoint.method):
        raise _Issue(
            (*loc, "unsafe"),
            f"{endpoint.method} is not idempotent: a retry may repeat its effect; "
            "set unsafe: true to retry it anyway",
        )
    return policy


_SCHEDULE_FIELDS = (
    "cron",
    "interval",
    "timezone",
    "min_interval",
    "max_interval",
    "jitter",
    "catch_up",
    "catch_up_window",
)


def _dependant_schedule(endpoint: EndpointConfig, loc: Loc) -> Schedule:
    """A dependant runs when its upstreams succeed: a time of its own would run it without
    their responses, which its templates need."""
    for name in _SCHEDULE_FIELDS:
        if getattr(endpoint, name) is not None:
            raise _Issue((*loc, name), "an endpoint with depends_on runs after its upstreams")
    return Schedule()


def _schedule(endpoint: EndpointConfig, loc: Loc) -> Schedule:
    """The baseline, checked one field at a time so that each error names its field."""
    for name in ("only_if_changed", "run_if"):
        if getattr(endpoint, name):
            raise _Issue((*loc, name), "applies to an endpoint with depends_on only")
    if endpoint.approval is not None:
        raise _Issue(
            (*loc, "approval"),
            "applies to an endpoint with depends_on only: a root endpoint has no DAG run to "
            "wait in",
        )
    if (endpoint.cron is None) == (endpoint.interval is None):
        raise _Issue((*loc, "cron"), "set exactly one of 'cron' or 'interval'")
    if endpoint.timezone is not None:
        if endpoint.cron is None:
            raise _Issue((*loc, "timezone"), "a time zone applies to 'cron' only")
        _check((*loc, "timezone"), lambda: zone(str(endpoint.timezone)))
    schedule = Schedule(
        cron=endpoint.cron,
        interval_seconds=endpoint.interval,
        timezone=endpoint.timezone or "UTC",
    )
    baseline_field = "cron" if endpoint.cron is not None else "interval"
    _check((*loc, baseline_field), lambda: validate_schedule(schedule))
    _check((*loc, "min_interval"), lambda: validate_schedule(schedule, endpoint.min_interval))
    _check((*loc, "max_interval"), lambda: validate_schedule(schedule, None, endpoint.max_interval))
    _check(
        (*loc, "min_interval"),
        lambda: validate_schedule(schedule, endpoint.min_interval, endpoint.max_interval),
    )
    return schedule


def _check_spacing(endpoint: EndpointConfig, schedule: Schedule, loc: Loc, floor: float) -> None:
    """No slot may come closer than the floor to the previous one, and a jittered call must
    leave the floor before the next slot: the baseline, the clamps and the jitter are checked
    against the shortest gap between the baseline's slots."""
    gap = shortest_gap(schedule)
    baseline = "cron" if schedule.cron is not None else "interval"
    between = "the interval" if schedule.cron is None else "the shortest gap between fires"
    floor_is = f"the floor {floor:g}s ({FLOOR_VARIABLE})"
    if gap is not None and gap < floor:
        raise _Issue((*loc, baseline), f"slots {gap:g}s apart are closer than {floor_is}")
    for name in ("min_interval", "max_interval"):
        value = getattr(endpoint, name)
        if value is not None and value < floor:
            raise _Issue((*loc, name), f"{value:g}s is below {floor_is}")
    jitter = endpoint.jitter
    if jitter is not None and gap is not None and jitter > gap - floor:
        raise _Issue(
            (*loc, "jitter"),
            f"{jitter:g}s is too wide: at most {gap - floor:g}s, {between} ({gap:g}s) less "
            f"{floor_is}, so that a call never runs into the next slot",
        )


def _check_headers(headers: Mapping[str, str], loc: Loc) -> None:
    """Refuse what would let a header value end its line and start a forged one (CR/LF), and
    names that servers read differently; the reason never repeats a value (it may be a secret)."""
    seen: set[str] = set()
    for name, value in headers.items():
        if not _HEADER_NAME.fullmatch(name):
            raise _Issue((*loc, name), "a header name is letters, digits and !#$%&'*+-.^_`|~ only")
        if name.lower() in seen:
            raise _Issue((*loc, name), "duplicate header (names are case-insensitive)")
        seen.add(name.lower())
        if found := _UNSENDABLE.search(value):
            raise _Issue(
                (*loc, name),
                f"the value holds U+{ord(found.group()):04X}, which a header cannot carry",
            )


def _check_storable(loc: Loc, value: object) -> None:
    """What SQLite would keep but PostgreSQL refuses (NaN, NUL, lone surrogates) is refused
    for every store, so a file applies on both or on neither."""
    try:
        check_storable(value)
    except ValueError as exc:
        raise _Issue(loc, f"cannot be stored: {exc}") from exc


def _check(loc: Loc, validate: Callable[[], object]) -> None:
    try:
        validate()
    except CronpilotError as exc:
        # Messages may quote a URL (a refused one): never with its credentials.
        raise _Issue(loc, mask_urls(str(exc))) from exc


def _where(source: str, loc: Loc, raw: object) -> str:
    """`jobs.yaml: job 'etl' endpoint 'fetch' field 'cron'` from a location in the document."""
    parts = [f"{source}:"]
    rest = loc
    node = raw
    for key, label in (("jobs", "job"), ("endpoints", "endpoint")):
        if len(rest) < 2 or rest[0] != key or not isinstance(rest[1], int):
            break
        node = _item(node, key, rest[1])
        name = node.get("name") if isinstance(node, dict) else None
        label_name = excerpt(repr(name)) if isinstance(name, str) else f"#{rest[1] + 1}"
        parts.append(f"{label} {label_name}")
        rest = rest[2:]
    if rest:
        parts.append(f"field {excerpt(repr(_path(rest)))}")
    return " ".join(parts).removesuffix(":")


def _path(loc: Loc) -> str:
    """`rules[0].then`: positions in brackets, as every field path is written (decision 0023)."""
    return "".join(
        f"[{part}]" if isinstance(part, int) else f".{part}" if i else part
        for i, part in enumerate(loc)
    )


def _item(node: object, key: str, index: int) -> object:
    items = node.get(key) if isinstance(node, dict) else None
    return items[index] if isinstance(items, list) and index < len(items) else None
