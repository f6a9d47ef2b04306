"""jobs.yaml `notify.targets`: each kind read, inherited from the job, refused in one line, and
exported (secrets as variables) so that `apply` reads back the same targets."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cronpilot.adapters.jobs_export import export_document
from cronpilot.adapters.jobs_file import parse_declarations
from cronpilot.adapters.views.declarations import _masked
from cronpilot.domain.access.secrets import MASK
from cronpilot.domain.alerts.notify_targets import (
    PAGERDUTY_EVENTS_URL,
    NotifyTarget,
    SmtpServer,
    TargetKind,
)
from cronpilot.domain.declaration_diff import planned_changes
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.model import EndpointSpec
from cronpilot.domain.ports import JobDeclaration

ALLOWED = ["127.0.0.1/32"]
SLACK_URL = "https://hooks.slack.com/services/T0/B0/sl4ck"
TARGETS = f"""\
jobs:
  - name: shop
    notify:
      targets:
        - {{kind: slack, url: "{SLACK_URL}", events: [failing, recovered]}}
        - {{kind: pagerduty, routing_key: R0UTE, events: [failing, recovered]}}
        - kind: email
          host: mail.example.com
          port: 2525
          from: cron@example.com
          to: [ops@example.com, oncall@example.com]
          starttls: true
          username: cron
          password: p4ss
        - {{kind: teams, url: "https://example.webhook.office.com/t34ms"}}
        - {{kind: webhook, url: "https://hooks.example.com/x?token=w3bh00k"}}
    endpoints:
      - name: orders
        url: https://api.example.com/orders
        interval: 30s
      - name: stock
        url: https://api.example.com/stock
        interval: 30s
        notify: {{targets: [{{kind: slack, url: "{SLACK_URL}"}}]}}
"""
SECRETS = ("sl4ck", "R0UTE", "p4ss", "t34ms", "w3bh00k")


def _declarations(text: str, **env: str) -> list[JobDeclaration]:
    return parse_declarations(text, "jobs.yaml", ALLOWED, env)


def _specs(text: str, **env: str) -> dict[str, EndpointSpec]:
    [declaration] = _declarations(text, **env)
    return {spec.name: spec for spec in declaration.endpoints}


def _error(target: str) -> str:
    text = TARGETS.replace(f'{{kind: slack, url: "{SLACK_URL}"}}]', f"{target}]")
    with pytest.raises(InvalidConfig) as caught:
        _declarations(text)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_every_kind_is_read_and_an_endpoint_inherits_the_jobs_targets() -> None:
    specs = _specs(TARGETS)

    slack, pagerduty, email, teams, webhook = specs["orders"].notify_targets
    assert slack == NotifyTarget(TargetKind.SLACK, url=SLACK_URL, events=("failing", "recovered"))
    assert pagerduty == NotifyTarget(
        TargetKind.PAGERDUTY,
        url=PAGERDUTY_EVENTS_URL,
        routing_key="R0UTE",
        events=("failing", "recovered"),
    )
    assert email.smtp == SmtpServer(
        "mail.example.com",
        "cron@example.com",
        ("ops@example.com", "oncall@example.com"),
        2525,
        True,
        "cron",
        "p4ss",
    )
    assert (teams.kind, teams.events) == (TargetKind.TEAMS, ())
    assert webhook.kind is TargetKind.WEBHOOK
    assert specs["stock"].notify_targets == (NotifyTarget(TargetKind.SLACK, url=SLACK_URL),)


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (
            '{kind: slack, url: "http://10.0.0.5/services/T/B/sl4ck"}',
            "field 'notify.targets[0].url': refused by the address guard: 10.0.0.5 is private",
        ),
        (
            "{kind: email, host: 169.254.169.254, from: a@b.org, to: [c@d.org]}",
            "field 'notify.targets[0].host': refused by the address guard: 169.254.169.254 is "
            "link-local",
        ),
        ("{kind: sms, url: x}", "field 'notify.targets[0]': set kind to one of webhook, slack"),
        ("{url: x}", "field 'notify.targets[0]': set kind to one of webhook"),
        (
            '{kind: slack, url: "https://hooks.slack.com/x", events: [failng]}',
            "field 'notify.targets[0].events[0]': unknown event 'failng'; one of failing,",
        ),
        ("{kind: pagerduty}", "field 'notify.targets[0].routing_key': Field required"),
        (
            '{kind: slack, url: "https://hooks.slack.com/x", routing_key: k}',
            "field 'notify.targets[0].routing_key': unknown field",
        ),
        (
            "{kind: email, host: mail.example.com, from: cron, to: [c@d.org]}",
            "field 'notify.targets[0].from': 'cron' is not an e-mail address",
        ),
        (
            "{kind: email, host: mail.example.com, from: a@b.org, to: [c@d.org], password: p}",
            "field 'notify.targets[0].username': set both username and password, or neither",
        ),
        (
            '{kind: teams, url: "https://t.example.com/a"}, {kind: teams, url: "https://t.example.com/a"}',
            "field 'notify.targets[1]': this target is listed twice",
        ),
    ],
)
def test_a_bad_target_is_refused_in_one_line_naming_its_field(target: str, expected: str) -> None:
    message = _error(target)

    assert message.startswith("jobs.yaml: job 'shop' endpoint 'stock' ")
    assert expected in message
    assert "sl4ck" not in message


def test_an_export_keeps_target_secrets_out_and_applies_back_with_them_set() -> None:
    declared = _declarations(TARGETS)

    exported = export_document(declared, with_secrets=False)

    for secret in SECRETS:
        assert secret not in exported
    assert "#   SHOP_ORDERS_NOTIFY_TARGET_1_URL: shop/orders notify target 1 url" in exported
    env = {
        "SHOP_ORDERS_NOTIFY_TARGET_1_URL": SLACK_URL,
        "SHOP_ORDERS_NOTIFY_TARGET_2_ROUTING_KEY": "R0UTE",
        "SHOP_ORDERS_NOTIFY_TARGET_3_PASSWORD": "p4ss",
        "SHOP_ORDERS_NOTIFY_TARGET_4_URL": "https://example.webhook.office.com/t34ms",
        "SHOP_ORDERS_NOTIFY_5_TOKEN": "w3bh00k",
        "SHOP_STOCK_NOTIFY_TARGET_1_URL": SLACK_URL,
    }
    assert _specs(exported, **env) == _specs(TARGETS)
    revealed = export_document(declared, with_secrets=True)
    assert _specs(revealed) == _specs(TARGETS)


def test_a_dry_run_masks_the_secrets_of_a_changed_target() -> None:
    [stored] = _declarations(TARGETS)
    [declared] = _declarations(TARGETS.replace("R0UTE", "N3WK3Y").replace("port: 2525", "port: 25"))
    stored_specs = {f"shop/{spec.name}": spec for spec in stored.endpoints}

    [_, orders, _] = planned_changes([declared], {"shop": stored.job}, stored_specs)

    changed = {
        item.path: (_masked(item.path, item.old), _masked(item.path, item.new))
        for item in orders.fields
    }
    assert changed == {
        "notify_targets[1].routing_key": (MASK, MASK),
        "notify_targets[2].smtp.port": (2525, 25),
    }


def test_the_documented_example_applies() -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "notify-targets.md"
    example = re.search(r"```yaml\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    assert example is not None
    env = {
        "SLACK_WEBHOOK_URL": SLACK_URL,
        "TEAMS_WEBHOOK_URL": "https://example.webhook.office.com/t34ms",
        "PAGERDUTY_ROUTING_KEY": "R0UTE",
        "SMTP_PASSWORD": "p4ss",
    }

    [checkout] = _specs(example[1], **env).values()

    kinds = [target.kind for target in checkout.notify_targets]
    assert kinds == ["slack", "teams", "pagerduty", "email", "webhook"]
