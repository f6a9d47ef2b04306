"""Notification targets (`notify.targets`): where an alert goes besides plain webhooks, which
events each receives, which of its values are secrets, and the message each kind is sent.

Pure: the payloads are functions of the event document (`domain.alerts.alerts`) and the target, one
per kind, so that every worker sends the same message and tests read them without a server.
A webhook target receives the document itself, exactly as a `notify.urls` webhook does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from urllib.parse import quote

from cronpilot.domain.access.secrets import MASK, mask_url
from cronpilot.domain.model import JSON

PAGERDUTY_EVENTS_URL = "https://events.pagerduty.com/v2/enqueue"
"""PagerDuty's Events API v2: where a `pagerduty` target sends unless it names another URL."""
DEFAULT_SMTP_PORT = 587
RESOLVING_EVENTS = frozenset({"recovered"})
"""Events that end an episode: PagerDuty resolves the incident the episode opened."""
MAX_SUMMARY = 1024
"""PagerDuty's limit on a summary; chat messages and subjects are cut there too."""


class TargetKind(StrEnum):
    WEBHOOK = "webhook"
    """The event document as JSON, signed like every outgoing call (`domain.alerts.alerts`)."""
    SLACK = "slack"
    """A Slack incoming webhook: `text` and blocks."""
    TEAMS = "teams"
    """A Microsoft Teams incoming webhook (Workflows): a message with an adaptive card."""
    PAGERDUTY = "pagerduty"
    """PagerDuty Events API v2: trigger, and resolve when the episode ends."""
    EMAIL = "email"
    """An e-mail through an SMTP server."""


@dataclass(frozen=True, slots=True)
class SmtpServer:
    host: str
    sender: str
    to: tuple[str, ...]
    port: int = DEFAULT_SMTP_PORT
    starttls: bool = False
    username: str | None = None
    password: str | None = None
    """A secret: sealed at rest, masked in every output."""


@dataclass(frozen=True, slots=True)
class NotifyTarget:
    """One target. `url` is where an HTTP kind posts (a secret for Slack and Teams, whose
    webhook URL is its credential); `routing_key` is PagerDuty's; `smtp` is e-mail's."""

    kind: TargetKind
    url: str = ""
    events: tuple[str, ...] = ()
    """The event names it receives; empty: every event."""
    routing_key: str = ""
    smtp: SmtpServer | None = None


def receives(target: NotifyTarget, event: str) -> bool:
    """Whether `target` is sent events named `event` (any name: new kinds route alike)."""
    return not target.events or event in target.events


SECRET_FIELDS: Mapping[TargetKind, tuple[str, ...]] = {
    TargetKind.WEBHOOK: (),
    TargetKind.SLACK: ("url",),
    TargetKind.TEAMS: ("url",),
    TargetKind.PAGERDUTY: ("routing_key",),
    TargetKind.EMAIL: ("smtp.password",),
}
"""The values of each kind that are secrets (`smtp.password`: the password of its server). Of
a chat webhook's URL, the secret is all after the host (`url_secret`)."""
_URL_HEAD = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^/?#]*/?)(.*)", re.DOTALL)


def url_secret(url: str) -> tuple[str, str]:
    """`https://hooks.slack.com/services/T/B/x` → (`https://hooks.slack.com/`,
    `services/T/B/x`): the host is no secret, and says where alerts go even while the rest is
    sealed or masked."""
    found = _URL_HEAD.fullmatch(url)
    return ("", url) if found is None else (found[1], found[2])


def with_secrets(target: NotifyTarget, change: Callable[[str], str]) -> NotifyTarget:
    """`target` with each secret value passed through `change` (to seal, open or mask it);
    an unset value stays unset."""
    secret, smtp = SECRET_FIELDS[target.kind], target.smtp
    head, rest = url_secret(target.url)
    if "url" in secret and rest:
        target = replace(target, url=head + change(rest))
    if "routing_key" in secret and target.routing_key:
        target = replace(target, routing_key=change(target.routing_key))
    if "smtp.password" in secret and smtp is not None and smtp.password is not None:
        target = replace(target, smtp=replace(smtp, password=change(smtp.password)))
    return target


def masked(target: NotifyTarget) -> NotifyTarget:
    """`target` fit for output: secrets masked, a webhook URL's secret parameters too."""
    shown = with_secrets(target, lambda _value: MASK)
    if target.kind is TargetKind.WEBHOOK:
        return replace(shown, url=mask_url(target.url))
    return shown


def address(target: NotifyTarget) -> str:
    """Where `target` sends, without its secrets: what the outbox shows and logs name. The
    same whether its secrets are in clear or sealed."""
    if target.kind is TargetKind.EMAIL and target.smtp is not None:
        smtp = target.smtp
        return f"smtp://{smtp.host}:{smtp.port} to {', '.join(smtp.to)}"
    return masked(target).url


# --- messages ---------------------------------------------------------------------------------


_HEADLINES: Mapping[str, str] = {
    "failing": "is failing",
    "recovered": "recovered",
    "auto_paused": "paused itself",
    "proposal_pending": "has a planner proposal waiting for review",
    "approval_pending": "has a DAG run waiting for approval",
    "missed": "missed a slot",
    "late": "started late",
    "no_workers": "had no scheduler worker alive",
    "overrunning": "outlasted its interval: slots skipped",
    "test": "sends a test alert: this destination takes cronpilot's alerts",
}


def summary(document: Mapping[str, JSON]) -> str:
    """One line saying what happened, to which slot, how late and since when:
    `[cronpilot] shop/orders is failing (3 consecutive failures)`, `[cronpilot] etl/fetch
    started late: slot 2030-01-07T12:05:00+00:00 started 45s late`."""
    event = str(document.get("event", ""))
    subject = document.get("endpoint") or document.get("job") or "cronpilot"
    headline = _HEADLINES.get(event, event.replace("_", " "))
    line = f"[cronpilot] {subject} {headline}"
    failures = document.get("failure_count")
    episode = document.get("episode")
    kind = episode.get("kind") if isinstance(episode, Mapping) else None
    since = episode.get("started_at") if isinstance(episode, Mapping) else None
    if event == "failing" and isinstance(failures, int):
        line += f" ({failures} consecutive failures)"
    elif event == "missed" and since:
        line += f": slot {since} has no run"
    elif event == "late" and (late := _lateness(document)) is not None:
        line += f": slot {late[0]} started {late[1]} late"
    elif event in ("overrunning", "no_workers") and since:
        line += f" since {since}"
    elif event == "recovered":
        line += f" from {kind or 'failing'}" + (f" (since {since})" if since else "")
    return _cut(line)


def _lateness(document: Mapping[str, JSON]) -> tuple[str, str] | None:
    """The last run's slot and how late it started (`45s`), from the document's ISO times."""
    run = document.get("last_run")
    if not isinstance(run, Mapping):
        return None
    slot, started = run.get("slot_at"), run.get("started_at")
    if not isinstance(slot, str) or not isinstance(started, str):
        return None
    late = datetime.fromisoformat(started) - datetime.fromisoformat(slot)
    return slot, f"{late.total_seconds():g}s"


def facts(document: Mapping[str, JSON]) -> list[tuple[str, str]]:
    """The event's details as (title, value) pairs, in the order a person reads them."""
    found: list[tuple[str, str]] = [("Event", str(document.get("event", "")))]
    for title, key in (("Job", "job"), ("Endpoint", "endpoint"), ("At", "at")):
        if (value := document.get(key)) is not None:
            found.append((title, str(value)))
    if isinstance(episode := document.get("episode"), Mapping):
        found.append(("Episode", f"{episode.get('kind')} since {episode.get('started_at')}"))
        if episode.get("recovered_at"):
            found.append(("Recovered at", str(episode.get("recovered_at"))))
    if isinstance(failures := document.get("failure_count"), int) and failures:
        found.append(("Consecutive failures", str(failures)))
    if isinstance(run := document.get("last_run"), dict):
        outcome = " ".join(
            str(part)
            for part in (run.get("status"), run.get("status_code"), run.get("error"))
            if part is not None
        )
        found.append(("Last run", f"{run.get('id')}: {outcome}"))
        found.append(("Slot", str(run.get("slot_at"))))
        if (late := _lateness(document)) is not None:
            found.append(("Started", f"{run.get('started_at')} ({late[1]} after its slot)"))
    if isinstance(paused := document.get("paused"), dict):
        until = paused.get("until")
        found.append(("Paused", f"{paused.get('reason')}" + (f" until {until}" if until else "")))
    if isinstance(proposal := document.get("proposal"), dict):
        found.append(("Proposal", f"{proposal.get('id')} {proposal.get('kind')}"))
        found.append(("Reason", str(proposal.get("reason"))))
    if isinstance(approval := document.get("approval"), dict):
        found.append(("Approve with", str(approval.get("approve"))))
    found += [(str(link.get("text")), str(link.get("href"))) for link in _links(document)]
    return found


def with_links(document: Mapping[str, JSON], public_url: str | None) -> dict[str, JSON]:
    """`document` with `links` back to the endpoint's console page under `public_url`
    (`CRONPILOT_PUBLIC_URL`); as it is without one, or for an event of no endpoint."""
    endpoint = document.get("endpoint")
    shown = dict(document)
    if public_url is None or not isinstance(endpoint, str):
        return shown
    href = f"{public_url.rstrip('/')}/console/endpoints/{quote(endpoint)}"
    shown["links"] = [{"href": href, "text": "Console"}]
    return shown


def _links(document: Mapping[str, JSON]) -> list[Mapping[str, JSON]]:
    links = document.get("links")
    if not isinstance(links, list):
        return []
    return [link for link in links if isinstance(link, Mapping)]


def slack_payload(document: Mapping[str, JSON]) -> dict[str, JSON]:
    """A Slack incoming-webhook message: `text` (what notifications show) and blocks."""
    details = "\n".join(f"*{title}:* {value}" for title, value in facts(document))
    return {
        "text": summary(document),
        "blocks": [
            {
                "type": "header",
                "text": {"type": "plain_text", "text": _cut(summary(document), 150)},
            },
            {"type": "section", "text": {"type": "mrkdwn", "text": _cut(details, 3000)}},
        ],
    }


def teams_payload(document: Mapping[str, JSON]) -> dict[str, JSON]:
    """A Microsoft Teams incoming-webhook message carrying one adaptive card."""
    card: dict[str, JSON] = {
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": "1.4",
        "body": [
            {"type": "TextBlock", "text": summary(document), "weight": "Bolder", "wrap": True},
            {
                "type": "FactSet",
                "facts": [{"title": title, "value": value} for title, value in facts(document)],
            },
        ],
    }
    return {
        "type": "message",
        "summary": summary(document),
        "attachments": [
            {"contentType": "application/vnd.microsoft.card.adaptive", "content": card}
        ],
    }


_SEVERITIES: Mapping[str, str] = {"failing": "error", "auto_paused": "critical"}


def dedup_key(document: Mapping[str, JSON]) -> str:
    """The key of the episode an event belongs to: the same for the event that opens it and
    the `recovered` that ends it, so that PagerDuty resolves the incident it opened. A document
    naming its `episode` (missed, late, no workers) is keyed by its kind and start; else by
    subject and condition (a recovery ends a failing streak), which PagerDuty reopens as a new
    incident once resolved."""
    episode = document.get("episode")
    subject = document.get("endpoint_id") or document.get("job") or "cronpilot"
    if isinstance(episode, Mapping):
        # A watch episode (`domain.alerts.alerts.Episode`): its start and its recovery carry the
        # same kind and start, whatever the event.
        return f"cronpilot/{subject}/{episode.get('kind')}/{episode.get('started_at')}"
    event = str(document.get("event", ""))
    condition = "failing" if event in RESOLVING_EVENTS else event
    return f"cronpilot/{subject}/{condition}"


def pagerduty_payload(document: Mapping[str, JSON], routing_key: str) -> dict[str, JSON]:
    """A PagerDuty Events API v2 event: `resolve` for an event that ends an episode, else
    `trigger` with a summary, the severity and the document as custom details."""
    event = str(document.get("event", ""))
    base: dict[str, JSON] = {"routing_key": routing_key, "dedup_key": dedup_key(document)}
    if event in RESOLVING_EVENTS:
        return {**base, "event_action": "resolve"}
    return {
        **base,
        "event_action": "trigger",
        "links": [dict(link) for link in _links(document)],
        "payload": {
            "summary": summary(document),
            "source": str(document.get("endpoint") or document.get("job") or "cronpilot"),
            "severity": _SEVERITIES.get(event, "warning"),
            "timestamp": document.get("at"),
            "component": document.get("endpoint"),
            "group": document.get("job"),
            "class": event,
            "custom_details": dict(document),
        },
    }


@dataclass(frozen=True, slots=True)
class MailMessage:
    subject: str
    text: str
    ident: str = ""
    """Unique to the message, the same on each attempt: the left part of its `Message-ID`."""
    at: datetime | None = None
    """When the event happened: its `Date`."""


def email_message(document: Mapping[str, JSON], ident: str = "") -> MailMessage:
    """An e-mail: the summary as subject; the facts, then the document as JSON. `ident` (the
    notification's id) makes its `Message-ID`, so that a retried delivery is the same message."""
    lines = [f"{title}: {value}" for title, value in facts(document)]
    lines += ["", json.dumps(dict(document), indent=2, ensure_ascii=False)]
    at = document.get("at")
    return MailMessage(
        subject=summary(document),
        text="\n".join(lines) + "\n",
        ident=ident,
        at=datetime.fromisoformat(at) if isinstance(at, str) else None,
    )


def http_body(target: NotifyTarget, document: Mapping[str, JSON]) -> dict[str, JSON]:
    """What an HTTP kind of target is sent for `document`."""
    if target.kind is TargetKind.SLACK:
        return slack_payload(document)
    if target.kind is TargetKind.TEAMS:
        return teams_payload(document)
    if target.kind is TargetKind.PAGERDUTY:
        return pagerduty_payload(document, target.routing_key)
    if target.kind is TargetKind.WEBHOOK:
        return dict(document)
    raise ValueError(f"a {target.kind} target is not sent over HTTP")


def _cut(text: str, limit: int = MAX_SUMMARY) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
