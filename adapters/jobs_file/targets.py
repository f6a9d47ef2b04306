"""The `notify.targets` entries of a jobs document: one model per kind of target, each
made into the domain's `NotifyTarget`."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    Field,
)

from cronpilot.adapters.jobs_file.fields import Strict
from cronpilot.domain.alerts.alerts import AlertEvent
from cronpilot.domain.alerts.notify_targets import (
    DEFAULT_SMTP_PORT,
    PAGERDUTY_EVENTS_URL,
    NotifyTarget,
    SmtpServer,
    TargetKind,
)
from cronpilot.domain.runs.excerpt import excerpt

_MAX_RECIPIENTS = 50
_MAIL_ADDRESS = re.compile(r"[^@\s<>,;\"]+@[^@\s<>,;\"]+")


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


EventName = Annotated[str, AfterValidator(_event_name)]
MailAddress = Annotated[str, AfterValidator(_mail_address)]


class _TargetConfig(Strict):
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
