"""`cronpilot export`: stored declarations written back as a jobs file (`adapters.jobs_file`'s
shape) that `apply` reads into the same specs, so export → apply changes nothing.

Secrets stay out of the file unless asked for (decision 0021): the value of a header whose name
looks secret, and of a URL query parameter whose name does, is written as a `${VARIABLE}`
reference that `apply` fills from the environment; so are the secrets of notification targets
(a Slack or Teams URL, a PagerDuty routing key, an SMTP password). The variables are listed at
the top of the file. With `with_secrets`, the values are written in clear instead. A value
that came from `${env:NAME}` or `${file:PATH}` (`EndpointSpec.references`) is written as it was
written, with or without `with_secrets`: the reference, never the value.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import yaml

from cronpilot.domain.access.secrets import is_secret_header, replace_secret_params
from cronpilot.domain.alerts.notify_targets import PAGERDUTY_EVENTS_URL, NotifyTarget, TargetKind
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.model import (
    DEFAULT_CATCH_UP_WINDOW_SECONDS,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_NOTIFY_AFTER,
    DEFAULT_PLANNER_MODE,
    DEFAULT_TIMEOUT_SECONDS,
    JSON,
    CatchUp,
    EndpointSpec,
    Objective,
    Overlap,
    RetryPolicy,
)
from cronpilot.domain.planning.approvals import DEFAULT_APPROVAL_TIMEOUT_SECONDS
from cronpilot.domain.ports import JobDeclaration
from cronpilot.domain.rules.rules import ActionKind, Rule, RuleAction
from cronpilot.domain.schedule.limits import Limit
from cronpilot.domain.schedule.quiet import WEEKDAYS, QuietWindow, clock_text

_NOT_A_NAME_CHAR = re.compile(r"[^A-Z0-9]+")
_REFERENCE = "${"
"""What `apply` reads as an environment variable in any string of a jobs file."""


@dataclass(slots=True)
class _Secrets:
    reveal: bool
    variables: dict[str, str] = field(default_factory=dict)
    """Variable → where its value belongs (`shop/orders header Authorization`)."""

    def value(self, ref: str, part: str, name: str, clear: str) -> str:
        """`clear` itself when revealing, else a reference to a variable of its own."""
        if self.reveal:
            return clear
        where = f"{ref} {part} {name}"
        base = _variable(ref, part if part.startswith("notify") else "", name)
        variable, n = base, 1
        # Two names that read alike once upper-cased (`a-b`, `a_b`) get variables of their own.
        while self.variables.get(variable, where) != where:
            n += 1
            variable = f"{base}_{n}"
        self.variables[variable] = where
        return f"${{{variable}}}"


def export_document(declarations: Sequence[JobDeclaration], *, with_secrets: bool) -> str:
    """The jobs file for `declarations`. Raises `InvalidConfig` for a value that holds `${`,
    which `apply` would read as a variable and so could not give back."""
    for declaration in declarations:
        _refuse_references(asdict(declaration.job), declaration.job.name)
        for spec in declaration.endpoints:
            # The references themselves are written back as they are.
            values = {**asdict(spec), "references": None}
            _refuse_references(values, f"{declaration.job.name}/{spec.name}")
    secrets = _Secrets(with_secrets)
    jobs = [_job(declaration, secrets) for declaration in declarations]
    limits = {limit.key: _limit(limit) for d in declarations for limit in d.limits}
    document = {"limits": dict(sorted(limits.items()))} if limits else {}
    text = yaml.safe_dump(
        document | {"jobs": jobs},
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=100,
    )
    header = ["# Exported by `cronpilot export`; `cronpilot apply -f` reads it back unchanged."]
    # A variable made for a secret that a reference then replaced is not read.
    variables = {name: where for name, where in secrets.variables.items() if f"${{{name}}}" in text}
    if variables:
        header.append("# Secrets are read from these environment variables when applied:")
        header += [f"#   {name}: {where}" for name, where in sorted(variables.items())]
    return "\n".join(header) + "\n" + text


def _refuse_references(value: object, ref: str) -> None:
    if isinstance(value, str) and _REFERENCE in value:
        raise InvalidConfig(
            f"cannot export {ref}",
            f"a value holds {_REFERENCE!r}, which apply would read as an environment variable",
        )
    if isinstance(value, dict):
        for item in value.values():
            _refuse_references(item, ref)
    elif isinstance(value, list | tuple):
        for item in value:
            _refuse_references(item, ref)


def _job(declaration: JobDeclaration, secrets: _Secrets) -> dict[str, Any]:
    job = declaration.job
    shown: dict[str, Any] = {"name": job.name}
    if job.description:
        shown["description"] = job.description
    if job.planner_mode is not DEFAULT_PLANNER_MODE:
        shown["planner_mode"] = job.planner_mode.value
    if job.rejection_cooldown_seconds is not None:
        shown["rejection_cooldown"] = _seconds(job.rejection_cooldown_seconds)
    if job.budget is not None:
        shown["budget"] = job.budget
    shown["endpoints"] = [
        _endpoint(f"{job.name}/{s.name}", s, secrets) for s in declaration.endpoints
    ]
    return shown


def _notify(ref: str, spec: EndpointSpec, secrets: _Secrets) -> dict[str, JSON]:
    """The endpoint's `notify` block: webhook URLs and targets as variables, the watch's limits."""
    notify: dict[str, JSON] = {}
    if spec.notify or spec.notify_targets or spec.notify_after != DEFAULT_NOTIFY_AFTER:
        urls = [_notify_url(ref, i + 1, url, secrets) for i, url in enumerate(spec.notify)]
        notify = {"urls": urls, "after": spec.notify_after}
        if spec.notify_targets:
            notify["targets"] = [
                _target(ref, i + 1, target, secrets) for i, target in enumerate(spec.notify_targets)
            ]
    for name, seconds in (
        ("missed_after", spec.missed_after_seconds),
        ("late_after", spec.late_after_seconds),
    ):
        if seconds is not None:
            notify[name] = _seconds(seconds)
    return notify


def _steering(spec: EndpointSpec) -> dict[str, Any]:
    """What the endpoint says of how it may be steered, when not the defaults."""
    shown: dict[str, Any] = {}
    if spec.accept_hints:
        shown["accept_hints"] = True
    if spec.dangerous:
        shown["dangerous"] = True
    if spec.objective is not Objective.FRESHNESS:
        shown["objective"] = spec.objective.value
    return shown


def _endpoint(ref: str, spec: EndpointSpec, secrets: _Secrets) -> dict[str, Any]:
    shown: dict[str, Any] = {"name": spec.name}
    if spec.description:
        shown["description"] = spec.description
    shown["url"] = replace_secret_params(
        spec.url, lambda name, value: secrets.value(ref, "URL parameter", name, value)
    )
    if spec.method != "GET":
        shown["method"] = spec.method
    if spec.headers:
        shown["headers"] = {
            name: secrets.value(ref, "header", name, value) if is_secret_header(name) else value
            for name, value in spec.headers.items()
        }
    if spec.body is not None:
        shown["body"] = spec.body
    shown.update(_schedule(spec))
    if spec.timeout_seconds != DEFAULT_TIMEOUT_SECONDS:
        shown["timeout"] = _seconds(spec.timeout_seconds)
    if spec.max_response_bytes != DEFAULT_MAX_RESPONSE_BYTES:
        shown["max_response_size"] = spec.max_response_bytes
    if spec.planner_mode is not None:
        shown["planner_mode"] = spec.planner_mode.value
    if spec.depends_on:
        shown["depends_on"] = list(spec.depends_on)
    if spec.only_if_changed:
        shown["only_if_changed"] = True
    if not spec.conditional:
        shown["conditional"] = False
    if spec.run_if is not None:
        shown["run_if"] = spec.run_if
    if spec.success_when is not None:
        shown["success_when"] = spec.success_when
    if spec.approval_timeout_seconds is not None:
        shown["approval"] = "required"
        if spec.approval_timeout_seconds != DEFAULT_APPROVAL_TIMEOUT_SECONDS:
            shown["approval_timeout"] = _seconds(spec.approval_timeout_seconds)
    if spec.change_ignores:
        shown["change_ignores"] = list(spec.change_ignores)
    notify = _notify(ref, spec, secrets)
    if notify:
        shown["notify"] = notify
    if spec.pause_after is not None:
        shown["pause_after"] = spec.pause_after
    if spec.retry is not None:
        shown["retry"] = _retry(spec.retry)
    shown.update(_steering(spec))
    if spec.rules:
        shown["rules"] = [_rule(rule) for rule in spec.rules]
    for reference in spec.references:
        _put(shown, reference.at, reference.written)
    if spec.limit is not None:
        shown["limit"] = spec.limit
    return shown


def _limit(limit: Limit) -> dict[str, JSON]:
    shown: dict[str, JSON] = {}
    if limit.concurrency is not None:
        shown["concurrency"] = limit.concurrency
    if limit.rate is not None:
        shown["rate"] = str(limit.rate)
    if limit.burst != 1:
        shown["burst"] = limit.burst
    return shown


def _put(document: dict[str, Any], at: tuple[str | int, ...], value: object) -> None:
    """`value` at the place `at` of `document`, made where the export left out a default (a
    mapping for a name, nothing for a position no longer there)."""
    node: Any = document
    for step, following in itertools.pairwise(at):
        if isinstance(node, dict) and isinstance(step, str):
            node = node.setdefault(step, [] if isinstance(following, int) else {})
        elif isinstance(node, list) and isinstance(step, int) and step < len(node):
            node = node[step]
        else:
            return
    last = at[-1]
    in_mapping = isinstance(node, dict) and isinstance(last, str)
    if in_mapping or (isinstance(node, list) and isinstance(last, int) and last < len(node)):
        node[last] = value


def _rule(rule: Rule) -> dict[str, JSON]:
    """A rule as `adapters.rules_config` reads it; its damping only where it has some."""
    shown: dict[str, JSON] = {"when": rule.when, "then": _then(rule.then)}
    if rule.for_seconds:
        shown["for"] = _seconds(rule.for_seconds)
    if rule.dwell_seconds is not None:
        shown["dwell"] = _seconds(rule.dwell_seconds)
    if rule.urgent:
        shown["urgent"] = True
    return shown


def _then(action: RuleAction) -> JSON:
    """A rule's action as `adapters.rules_config` reads it."""
    if action.kind is ActionKind.INTERVAL:
        assert action.interval_seconds is not None
        shown: dict[str, JSON] = {"interval": _seconds(action.interval_seconds)}
        if action.ttl_seconds is not None:
            shown["ttl"] = _seconds(action.ttl_seconds)
        return shown
    if action.kind is ActionKind.PAUSE:
        assert action.for_seconds is not None
        return {"pause": {"for": _seconds(action.for_seconds)}}
    return action.kind.value


def _notify_url(ref: str, number: int, url: str, secrets: _Secrets) -> str:
    def value_for(name: str, value: str) -> str:
        return secrets.value(ref, f"notify {number}", name, value)

    return replace_secret_params(url, value_for)


def _target(ref: str, number: int, target: NotifyTarget, secrets: _Secrets) -> dict[str, JSON]:
    """A `notify.targets` entry as `adapters.jobs_file` reads it; its secrets as variables
    (`SHOP_ORDERS_NOTIFY_TARGET_1_ROUTING_KEY`) unless revealed."""
    part = f"notify target {number}"
    shown: dict[str, JSON] = {"kind": target.kind.value}
    if target.kind is TargetKind.WEBHOOK:
        shown["url"] = _notify_url(ref, number, target.url, secrets)
    elif target.kind in (TargetKind.SLACK, TargetKind.TEAMS):
        shown["url"] = secrets.value(ref, part, "url", target.url)
    elif target.kind is TargetKind.PAGERDUTY:
        shown["routing_key"] = secrets.value(ref, part, "routing_key", target.routing_key)
        if target.url != PAGERDUTY_EVENTS_URL:
            shown["url"] = target.url
    elif (smtp := target.smtp) is not None:
        shown.update(
            {"host": smtp.host, "port": smtp.port, "from": smtp.sender, "to": list(smtp.to)}
        )
        if smtp.starttls:
            shown["starttls"] = True
        if smtp.username is not None:
            shown["username"] = smtp.username
        if smtp.password is not None:
            shown["password"] = secrets.value(ref, part, "password", smtp.password)
    if target.events:
        shown["events"] = list(target.events)
    return shown


def _schedule(spec: EndpointSpec) -> dict[str, JSON]:
    """The baseline and its bounds; nothing for a dependant, whose upstreams start it."""
    schedule = spec.schedule
    shown: dict[str, JSON] = {}
    if schedule.cron is not None:
        shown["cron"] = schedule.cron
        if schedule.timezone != "UTC":
            shown["timezone"] = schedule.timezone
    if schedule.interval_seconds is not None:
        shown["interval"] = _seconds(schedule.interval_seconds)
    optional = {
        "min_interval": spec.min_interval_seconds,
        "max_interval": spec.max_interval_seconds,
        "jitter": spec.jitter_seconds,
    }
    shown.update({name: _seconds(value) for name, value in optional.items() if value is not None})
    if spec.catch_up is not CatchUp.ONE:
        shown["catch_up"] = spec.catch_up.value
    if spec.catch_up_window_seconds != DEFAULT_CATCH_UP_WINDOW_SECONDS:
        shown["catch_up_window"] = _seconds(spec.catch_up_window_seconds)
    if spec.overlap is not Overlap.SKIP:
        shown["overlap"] = spec.overlap.value
    if spec.quiet:
        shown["quiet"] = [_quiet(window) for window in spec.quiet]
    return shown


def _quiet(window: QuietWindow) -> dict[str, JSON]:
    """A quiet window as `adapters.jobs_file.quiet` reads it, its zone always named."""
    shown: dict[str, JSON] = {}
    if window.cron is not None:
        assert window.duration_seconds is not None
        shown |= {"cron": window.cron, "for": _seconds(window.duration_seconds)}
    if window.days:
        shown["days"] = [WEEKDAYS[day] for day in window.days]
    if window.dates:
        shown["dates"] = list(window.dates)
    if window.hours is not None:
        shown["hours"] = "-".join(clock_text(minute) for minute in window.hours)
    shown["timezone"] = window.timezone
    if window.every_seconds is not None:
        shown["every"] = _seconds(window.every_seconds)
    return shown


def _retry(policy: RetryPolicy) -> dict[str, JSON]:
    return {
        "attempts": policy.attempts,
        "backoff": _seconds(policy.backoff_seconds),
        "max_backoff": _seconds(policy.max_backoff_seconds),
        "on": [kind.value for kind in policy.on],
        "unsafe": policy.unsafe,
    }


def _seconds(value: float) -> float | int:
    """`30` rather than `30.0`: the file reads as a person would write it."""
    return int(value) if value.is_integer() else value


def _variable(*parts: str) -> str:
    """`shop/orders`, `Authorization` → `SHOP_ORDERS_AUTHORIZATION`."""
    name = _NOT_A_NAME_CHAR.sub("_", "_".join(parts).upper()).strip("_")
    return name if not name[:1].isdigit() else f"_{name}"
