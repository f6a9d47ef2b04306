"""`export` writes what `apply` reads back unchanged; `apply --dry-run` says what would change."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cronpilot.adapters.jobs_export import export_document
from cronpilot.adapters.jobs_file import example_jobs_file, parse_declarations
from cronpilot.domain.declaration_diff import (
    DeclarationChange,
    FieldChange,
    FieldOutcome,
    Outcome,
    planned_changes,
)
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.model import Job, PlannerMode
from cronpilot.domain.ports import JobDeclaration

NETWORKS = ["127.0.0.1/32"]
EVERYTHING = """\
limits:
  api.example.com: {concurrency: 3, rate: 100/m, burst: 5}
  partner: {rate: 2/s}
jobs:
  - name: shop
    description: "the shop: yes, no, off, 2024-01-01"
    planner_mode: review
    rejection_cooldown: 2h
    notify: ["https://hooks.example.com/shop?token=t0k"]
    pause_after: 7
    endpoints:
      - name: orders
        description: every option set
        url: https://api.example.com/orders?page=1&api_key=s3cret&sig=abc
        method: post
        headers: {Authorization: "Bearer tok", Accept: application/json, X-Mode: "off"}
        body: {since: "2024-01-01", n: [1, 2.5, null, true], deep: {key: "value"}}
        cron: "*/5 * * * *"
        timezone: Europe/Paris
        min_interval: 2m
        max_interval: 1h
        timeout: 2.5s
        max_response_size: 2MiB
        planner_mode: auto
        notify: {after: 5}
        retry: {attempts: 4, backoff: 250ms, max_backoff: 10s, on: [5xx, 429], unsafe: true}
        accept_hints: true
        dangerous: true
        jitter: 30s
        catch_up: none
        catch_up_window: 1h
        success_when: 'body.state == "ok" && headers["x-mode"] != "off"'
        change_ignores: [checked_at, meta.request_id, rows.0.at]
        rules:
          - {when: 'body.pending > 200', then: {interval: 3m, ttl: 30m}, for: 30s, dwell: 5m}
          - {when: 'body.pending > 100', then: {interval: 10m}}
          - {when: 'status >= 500', then: {pause: {for: 10m}}, urgent: true, dwell: 0}
          - {when: 'body.pending == 0', then: run_now}
          - {when: 'true', then: baseline}
      - name: sync
        url: https://api.example.com/sync/{{ orders.id }}
        depends_on: [orders]
        only_if_changed: true
        run_if: |-
          orders.body.count > 0 &&
            orders.status == 200
        approval: required
        approval_timeout: 2h
        notify: []
        rules: [{when: 'orders.body.pending > 0', then: resume}]
        limit: partner
"""


def _declarations(text: str, **env: str) -> list[JobDeclaration]:
    return parse_declarations(text, "jobs.yaml", NETWORKS, env, floor_seconds=1.0)


def _content(declarations: list[JobDeclaration]) -> list[object]:
    """What apply compares: everything but the ids a parse makes afresh."""
    return [(replace(d.job, id=""), list(d.endpoints), list(d.limits)) for d in declarations]


def _example() -> str:
    return example_jobs_file().read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "text", [EVERYTHING, _example().replace("${SIMULATOR_URL}", "http://127.0.0.1:8080")]
)
def test_an_export_with_secrets_applies_to_the_same_declarations(text: str) -> None:
    declared = _declarations(text)

    exported = export_document(declared, with_secrets=True)

    assert _content(_declarations(exported)) == _content(declared)
    assert export_document(_declarations(exported), with_secrets=True) == exported
    if text is EVERYTHING:
        listed = "change_ignores:\n    - checked_at\n    - meta.request_id\n    - rows[0].at\n"
        assert listed in exported


def test_an_export_keeps_secrets_out_as_variables_that_apply_fills() -> None:
    declared = _declarations(EVERYTHING)

    exported = export_document(declared, with_secrets=False)

    for secret in ("Bearer tok", "s3cret", "sig=abc", "t0k"):
        assert secret not in exported
    assert "#   SHOP_ORDERS_AUTHORIZATION: shop/orders header Authorization" in exported
    assert "api_key=${SHOP_ORDERS_API_KEY}&sig=${SHOP_ORDERS_SIG}" in exported
    env = {
        "SHOP_ORDERS_AUTHORIZATION": "Bearer tok",
        "SHOP_ORDERS_API_KEY": "s3cret",
        "SHOP_ORDERS_SIG": "abc",
        "SHOP_ORDERS_NOTIFY_1_TOKEN": "t0k",
    }
    assert _content(_declarations(exported, **env)) == _content(declared)
    with pytest.raises(InvalidConfig, match="variable SHOP_ORDERS_API_KEY is not set"):
        _declarations(exported)


def test_a_value_apply_would_read_as_a_variable_is_refused() -> None:
    [declared] = _declarations(EVERYTHING)
    orders = replace(declared.endpoints[0], body={"template": "${HOME}"})

    with pytest.raises(InvalidConfig, match=r"cannot export shop/orders: a value holds '\$\{'"):
        export_document([replace(declared, endpoints=[orders])], with_secrets=True)


def test_a_dry_run_lists_each_changed_field_old_and_new() -> None:
    [stored] = _declarations(EVERYTHING)
    edited = (
        EVERYTHING.replace("min_interval: 2m", "min_interval: 3m")
        .replace('X-Mode: "off"', 'X-New: "1"')
        .replace("meta.request_id, rows.0.at", "'rows[0].at', latency_ms")
    )
    [declared] = _declarations(edited.replace('deep: {key: "value"}', "deep: {}"))
    stored_specs = {f"shop/{spec.name}": spec for spec in stored.endpoints}
    stored_specs["shop/gone"] = stored.endpoints[1]

    changes = planned_changes([declared], {"shop": stored.job}, stored_specs)

    assert changes == [
        DeclarationChange("shop", Outcome.UNCHANGED),
        DeclarationChange(
            "shop/orders",
            Outcome.UPDATE,
            (
                FieldChange("body.deep.key", FieldOutcome.REMOVED, old="value"),
                FieldChange(
                    "change_ignores",
                    FieldOutcome.CHANGED,
                    ["checked_at", "meta.request_id", "rows[0].at"],
                    ["checked_at", "rows[0].at", "latency_ms"],
                ),
                FieldChange("headers.X-Mode", FieldOutcome.REMOVED, old="off"),
                FieldChange("headers.X-New", FieldOutcome.ADDED, new="1"),
                FieldChange("min_interval_seconds", FieldOutcome.CHANGED, 120.0, 180.0),
            ),
        ),
        DeclarationChange("shop/sync", Outcome.UNCHANGED),
        DeclarationChange("shop/gone", Outcome.LEFT_ALONE),
    ]


def test_a_dry_run_of_new_things_creates_them() -> None:
    [declared] = _declarations(EVERYTHING)
    renamed = replace(declared, job=Job("other", planner_mode=PlannerMode.OFF))

    changes = planned_changes([renamed], {}, {})

    assert [(c.ref, c.outcome) for c in changes] == [
        ("other", Outcome.CREATE),
        ("other/orders", Outcome.CREATE),
        ("other/sync", Outcome.CREATE),
    ]
    job_change = planned_changes(
        [declared], {"shop": replace(declared.job, planner_mode=PlannerMode.OFF)}, {}
    )[0]
    assert job_change == DeclarationChange(
        "shop",
        Outcome.UPDATE,
        (FieldChange("planner_mode", FieldOutcome.CHANGED, "off", "review"),),
    )


def test_a_dry_run_names_the_rule_that_changes() -> None:
    [stored] = _declarations(EVERYTHING)
    edited = EVERYTHING.replace("then: {interval: 10m}", "then: {interval: 5m}").replace(
        "'body.pending == 0'", "'body.pending < 1'"
    )
    [declared] = _declarations(edited)
    stored_specs = {f"shop/{spec.name}": spec for spec in stored.endpoints}

    [_, orders, _] = planned_changes([declared], {"shop": stored.job}, stored_specs)

    assert orders == DeclarationChange(
        "shop/orders",
        Outcome.UPDATE,
        (
            FieldChange("rules[1].then.interval_seconds", FieldOutcome.CHANGED, 600.0, 300.0),
            FieldChange(
                "rules[3].when", FieldOutcome.CHANGED, "body.pending == 0", "body.pending < 1"
            ),
        ),
    )


def test_a_dry_run_shows_conditions_changed_added_and_removed() -> None:
    [stored] = _declarations(EVERYTHING)
    edited = EVERYTHING.replace('body.state == "ok"', 'body.state != "down"')
    [declared] = _declarations(edited.replace("run_if: |-", "description: |-"))
    stored_specs = {f"shop/{spec.name}": spec for spec in stored.endpoints}

    changes = planned_changes([declared], {"shop": stored.job}, stored_specs)

    assert [change.fields for change in changes[1:]] == [
        (
            FieldChange(
                "success_when",
                FieldOutcome.CHANGED,
                'body.state == "ok" && headers["x-mode"] != "off"',
                'body.state != "down" && headers["x-mode"] != "off"',
            ),
        ),
        (
            FieldChange("description", FieldOutcome.CHANGED, "", stored.endpoints[1].run_if),
            FieldChange("run_if", FieldOutcome.REMOVED, stored.endpoints[1].run_if),
        ),
    ]


def test_graded_is_the_default_mode_and_dangerous_is_exported_and_diffed() -> None:
    text = EVERYTHING.replace("    planner_mode: review\n", "", 1)
    [graded] = _declarations(text)
    [off] = _declarations(text.replace("    pause_after: 7\n", "    planner_mode: 'off'\n", 1))
    safe = EVERYTHING.replace("        dangerous: true\n", "")
    [stored], [declared] = _declarations(EVERYTHING), _declarations(safe)

    [_, orders, _] = planned_changes(
        [declared], {"shop": stored.job}, {f"shop/{s.name}": s for s in stored.endpoints}
    )

    assert graded.job.planner_mode is PlannerMode.GRADED
    assert "planner_mode: graded" not in export_document([graded], with_secrets=True)
    assert "  planner_mode: 'off'\n" in export_document([off], with_secrets=True)
    assert graded.endpoints[0].dangerous is True
    assert "    dangerous: true\n" in export_document([graded], with_secrets=True)
    assert orders.fields == (FieldChange("dangerous", FieldOutcome.CHANGED, True, False),)


def test_a_dry_run_shows_a_rules_damping() -> None:
    [stored] = _declarations(EVERYTHING)
    edited = EVERYTHING.replace("for: 30s, dwell: 5m}", "dwell: 2m}").replace(
        "urgent: true, dwell: 0}", "for: 1m}"
    )
    [declared] = _declarations(edited)
    stored_specs = {f"shop/{spec.name}": spec for spec in stored.endpoints}

    [_, orders, _] = planned_changes([declared], {"shop": stored.job}, stored_specs)

    assert orders.fields == (
        FieldChange("rules[0].dwell_seconds", FieldOutcome.CHANGED, 300.0, 120.0),
        FieldChange("rules[0].for_seconds", FieldOutcome.CHANGED, 30.0, 0.0),
        FieldChange("rules[2].dwell_seconds", FieldOutcome.REMOVED, old=0.0),
        FieldChange("rules[2].for_seconds", FieldOutcome.CHANGED, 0.0, 60.0),
        FieldChange("rules[2].urgent", FieldOutcome.CHANGED, True, False),
    )


def test_a_jobs_rejection_cool_down_is_read_exported_and_diffed() -> None:
    [stored] = _declarations(EVERYTHING)
    [default] = _declarations(EVERYTHING.replace("    rejection_cooldown: 2h\n", "", 1))

    [job, *_] = planned_changes(
        [default], {"shop": stored.job}, {f"shop/{s.name}": s for s in stored.endpoints}
    )

    assert (stored.job.rejection_cooldown_seconds, default.job.rejection_cooldown_seconds) == (
        7200,
        None,
    )
    assert "  rejection_cooldown: 7200\n" in export_document([stored], with_secrets=True)
    assert "rejection_cooldown" not in export_document([default], with_secrets=True)
    assert job.fields == (
        FieldChange("rejection_cooldown_seconds", FieldOutcome.REMOVED, old=7200.0),
    )
    with pytest.raises(InvalidConfig, match="rejection_cooldown"):
        _declarations(EVERYTHING.replace("rejection_cooldown: 2h", "rejection_cooldown: -1s"))
