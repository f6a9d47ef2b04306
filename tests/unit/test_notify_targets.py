"""Notification targets: the message each kind is sent, routing by event, secrets masked."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cronpilot.adapters.views.notifications import target_kind
from cronpilot.domain.access.secrets import MASK
from cronpilot.domain.alerts.alerts import AlertEvent, Episode, Notification, run_notifications
from cronpilot.domain.alerts.notify_targets import (
    NotifyTarget,
    SmtpServer,
    TargetKind,
    address,
    dedup_key,
    email_message,
    facts,
    http_body,
    masked,
    pagerduty_payload,
    receives,
    slack_payload,
    summary,
    teams_payload,
    with_links,
)
from cronpilot.domain.model import (
    Endpoint,
    EndpointSpec,
    Run,
    RunStatus,
    RunTrigger,
    Schedule,
    ScheduleSource,
)

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
FAILING = {
    "id": "evt1",
    "event": "failing",
    "job": "shop",
    "endpoint": "shop/orders",
    "endpoint_id": "ep1",
    "at": NOW.isoformat(),
    "failure_count": 3,
    "paused": None,
    "last_run": {
        "id": "run9",
        "status": "failed",
        "status_code": 503,
        "error_kind": "http_status",
        "error": "HTTP 503 Service Unavailable",
        "slot_at": NOW.isoformat(),
        "finished_at": NOW.isoformat(),
    },
    "proposal": None,
    "approval": None,
}
RECOVERED = {**FAILING, "id": "evt2", "event": "recovered", "failure_count": 0}
SLACK = NotifyTarget(TargetKind.SLACK, url="https://hooks.slack.com/services/T0/B0/s3cr3t")
MAIL = NotifyTarget(
    TargetKind.EMAIL,
    smtp=SmtpServer(
        "mail.example.com", "cron@example.com", ("ops@example.com",), 2525, True, "u", "pw"
    ),
)


def test_slack_gets_a_text_and_blocks_naming_the_endpoint_and_its_last_run() -> None:
    payload = slack_payload(FAILING)

    assert payload["text"] == "[cronpilot] shop/orders is failing (3 consecutive failures)"
    header, section = payload["blocks"]
    assert header == {"type": "header", "text": {"type": "plain_text", "text": payload["text"]}}
    assert section["type"] == "section"
    assert section["text"]["type"] == "mrkdwn"
    assert "*Last run:* run9: failed 503 HTTP 503 Service Unavailable" in section["text"]["text"]
    assert "*Job:* shop" in section["text"]["text"]


def test_teams_gets_a_message_with_one_adaptive_card_of_facts() -> None:
    payload = teams_payload(FAILING)

    assert payload["type"] == "message"
    [attachment] = payload["attachments"]
    assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
    card = attachment["content"]
    assert (card["type"], card["version"]) == ("AdaptiveCard", "1.4")
    title, facts = card["body"]
    assert title["text"] == "[cronpilot] shop/orders is failing (3 consecutive failures)"
    assert {"title": "Endpoint", "value": "shop/orders"} in facts["facts"]


def test_pagerduty_triggers_then_resolves_the_same_episode() -> None:
    trigger = pagerduty_payload(FAILING, "R0UTE")
    resolve = pagerduty_payload(RECOVERED, "R0UTE")

    assert trigger["event_action"] == "trigger"
    assert trigger["routing_key"] == "R0UTE"
    assert trigger["payload"]["severity"] == "error"
    assert trigger["payload"]["source"] == "shop/orders"
    assert trigger["payload"]["custom_details"] == FAILING
    assert resolve == {
        "routing_key": "R0UTE",
        "dedup_key": trigger["dedup_key"],
        "event_action": "resolve",
    }
    assert trigger["dedup_key"] == "cronpilot/ep1/failing"


def test_an_event_naming_its_episode_is_keyed_by_it() -> None:
    """A watch episode's start (missed runs) and its `recovered` resolve one incident; the next
    episode of the same endpoint opens another."""
    start = datetime(2026, 11, 27, 12, tzinfo=UTC)
    opened = {**FAILING, "event": "missed", "episode": Episode(AlertEvent.MISSED, start).document()}
    over = Episode(AlertEvent.MISSED, start, recovered_at=start + timedelta(hours=1))
    ended = {**opened, "event": "recovered", "episode": over.document()}
    later = Episode(AlertEvent.MISSED, start + timedelta(days=1)).document()

    assert dedup_key(opened) == dedup_key(ended) == "cronpilot/ep1/missed/2026-11-27T12:00:00+00:00"
    assert dedup_key({**opened, "episode": later}) != dedup_key(opened)
    assert pagerduty_payload(opened, "k")["event_action"] == "trigger"
    assert pagerduty_payload(ended, "k")["event_action"] == "resolve"


def test_an_email_has_the_summary_as_subject_and_the_facts_then_the_document() -> None:
    message = email_message(FAILING)

    assert message.subject == "[cronpilot] shop/orders is failing (3 consecutive failures)"
    assert message.text.startswith("Event: failing\nJob: shop\nEndpoint: shop/orders\n")
    assert '"endpoint_id": "ep1"' in message.text


def test_a_webhook_target_gets_the_document_itself() -> None:
    target = NotifyTarget(TargetKind.WEBHOOK, url="https://hooks.example.com/x")

    assert http_body(target, FAILING) == FAILING


def test_an_unknown_event_still_reads() -> None:
    """Routing and messages take any event name: kinds added later need no change here."""
    document = {"event": "a_new_kind", "at": NOW.isoformat()}

    assert slack_payload(document)["text"] == "[cronpilot] cronpilot a new kind"
    assert receives(NotifyTarget(TargetKind.SLACK, url="u"), "a_new_kind")
    assert not receives(NotifyTarget(TargetKind.SLACK, url="u", events=("failing",)), "a_new_kind")


def test_secrets_are_masked_and_addresses_keep_only_the_host() -> None:
    pagerduty = NotifyTarget(
        TargetKind.PAGERDUTY, url="https://events.pagerduty.com/v2/enqueue", routing_key="R0UTE"
    )

    assert masked(SLACK).url == f"https://hooks.slack.com/{MASK}"
    assert masked(pagerduty).routing_key == MASK
    assert masked(MAIL).smtp == SmtpServer(
        "mail.example.com", "cron@example.com", ("ops@example.com",), 2525, True, "u", MASK
    )
    assert address(SLACK) == f"https://hooks.slack.com/{MASK}"
    assert address(MAIL) == "smtp://mail.example.com:2525 to ops@example.com"
    assert "s3cr3t" not in repr(masked(SLACK))


def _endpoint(*targets: NotifyTarget, failures: int = 0) -> Endpoint:
    spec = EndpointSpec(
        name="orders",
        url="https://api.example.com/orders",
        schedule=Schedule(interval_seconds=30),
        notify_targets=targets,
        notify_after=1,
    )
    return Endpoint(id="ep1", job_id="j1", job_name="shop", spec=spec, failure_count=failures)


def test_each_target_is_sent_the_events_it_receives() -> None:
    only_recoveries = NotifyTarget(
        TargetKind.SLACK, url="https://hooks.slack.com/a", events=("recovered",)
    )
    everything = NotifyTarget(TargetKind.TEAMS, url="https://example.webhook.office.com/b")
    before, after = (
        _endpoint(only_recoveries, everything),
        _endpoint(only_recoveries, everything, failures=1),
    )
    run = Run(
        id="r1",
        endpoint_id="ep1",
        job_id="j1",
        trace_id="t1",
        trigger=RunTrigger.SCHEDULE,
        schedule_source=ScheduleSource.BASELINE,
        status=RunStatus.FAILED,
        slot_at=NOW,
        started_at=NOW,
        worker_id="w1",
    )

    [failing] = run_notifications(before, after, run, NOW)

    assert (failing.event, failing.target) == (AlertEvent.FAILING, everything)
    assert failing.url == address(everything)


def test_every_alert_says_what_which_slot_how_late_and_since_when() -> None:
    slot, started = NOW, NOW + timedelta(seconds=45)
    run = {
        "id": "r1",
        "status": "success",
        "slot_at": slot.isoformat(),
        "started_at": started.isoformat(),
    }
    base = {"endpoint": "etl/fetch", "at": started.isoformat(), "last_run": run}
    late = {**base, "event": "late", "episode": {"kind": "late", "started_at": slot.isoformat()}}
    missed = {
        "event": "missed",
        "endpoint": "etl/fetch",
        "episode": {"kind": "missed", "started_at": slot.isoformat()},
    }
    ended = {**missed, "event": "recovered"}

    assert summary(late) == (
        f"[cronpilot] etl/fetch started late: slot {slot.isoformat()} started 45s late"
    )
    assert (
        summary(missed)
        == f"[cronpilot] etl/fetch missed a slot: slot {slot.isoformat()} has no run"
    )
    assert summary(ended) == (
        f"[cronpilot] etl/fetch recovered from missed (since {slot.isoformat()})"
    )
    assert ("Slot", slot.isoformat()) in facts(late)
    assert ("Episode", f"late since {slot.isoformat()}") in facts(late)


def test_alerts_link_back_to_the_console_when_a_public_url_is_set() -> None:
    document = {"event": "failing", "endpoint": "etl/fetch", "job": "etl"}

    linked = with_links(document, "https://cron.example.com/")
    trigger = pagerduty_payload(linked, "key")

    href = "https://cron.example.com/console/endpoints/etl/fetch"
    assert trigger["links"] == [{"href": href, "text": "Console"}]
    assert ("Console", href) in facts(linked)
    assert href in email_message(linked).text
    assert with_links(document, None) == document


def test_a_notification_says_which_kind_of_target_it_goes_to() -> None:
    def notification(target: NotifyTarget | None) -> Notification:
        return Notification("n", "e", "j", AlertEvent.FAILING, "u", {}, NOW, NOW, target=target)

    kinds = [
        target_kind(notification(target))
        for target in (
            None,
            NotifyTarget(TargetKind.SLACK, url="https://hooks.slack.com/x"),
            NotifyTarget(TargetKind.TEAMS, url="https://example.webhook.office.com/x"),
        )
    ]

    assert kinds == ["webhook", "slack", "teams"]
