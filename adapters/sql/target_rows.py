"""Notification targets (`domain.alerts.notify_targets`) as stored in JSON columns: the endpoint's
`notify_targets` and an outbox row's `target`. Secrets are sealed by the caller
(`adapters.crypto.seal_target`) before a value is made, and opened after it is read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cronpilot.domain.alerts.notify_targets import NotifyTarget, SmtpServer, TargetKind
from cronpilot.domain.model import JSON


def target_value(target: NotifyTarget) -> dict[str, JSON]:
    value: dict[str, JSON] = {"kind": target.kind.value, "events": list(target.events)}
    if target.url:
        value["url"] = target.url
    if target.routing_key:
        value["routing_key"] = target.routing_key
    if (smtp := target.smtp) is not None:
        value["smtp"] = {
            "host": smtp.host,
            "port": smtp.port,
            "sender": smtp.sender,
            "to": list(smtp.to),
            "starttls": smtp.starttls,
            "username": smtp.username,
            "password": smtp.password,
        }
    return value


def target_from_value(value: dict[str, Any]) -> NotifyTarget:
    smtp = value.get("smtp")
    return NotifyTarget(
        kind=TargetKind(value["kind"]),
        url=value.get("url", ""),
        events=tuple(value["events"]),
        routing_key=value.get("routing_key", ""),
        smtp=None if smtp is None else SmtpServer(**{**smtp, "to": tuple(smtp["to"])}),
    )


def targets_value(targets: Sequence[NotifyTarget]) -> list[dict[str, JSON]]:
    return [target_value(target) for target in targets]


def targets_from_value(value: Sequence[dict[str, Any]]) -> tuple[NotifyTarget, ...]:
    return tuple(target_from_value(item) for item in value)
