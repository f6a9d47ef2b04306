"""`rules:` in jobs.yaml: what each `then` becomes, and one line for each bad input."""

from __future__ import annotations

import pytest

from cronpilot.adapters.jobs_file import parse_declarations
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.model import EndpointSpec
from cronpilot.domain.rules.rules import ActionKind, Rule, RuleAction

BASE = """\
jobs:
  - name: queue
    endpoints:
      - name: depth
        url: https://93.184.216.34/depth
        interval: 5s
      - name: processor
        url: https://93.184.216.34/process
        interval: 10s
        min_interval: 3s
        max_interval: 2m
"""
WHERE = "jobs.yaml: job 'queue' endpoint 'processor' field"


def processor(rules: str) -> EndpointSpec:
    [declaration] = parse_declarations(BASE + rules, "jobs.yaml", [])
    return declaration.endpoints[1]


def error_of(rules: str) -> str:
    with pytest.raises(InvalidConfig) as caught:
        processor(rules)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_each_action_as_written() -> None:
    spec = processor(
        "        rules:\n"
        "          - {when: 'depth.body.pending > 200', then: {interval: 3s, ttl: 10m}}\n"
        "          - {when: 'depth.body.pending > 100', then: {interval: 30s}}\n"
        "          - {when: 'status == 503', then: {pause: {for: 5m}}}\n"
        "          - {when: 'depth.body.pending > 50', then: run_now}\n"
        "          - {when: 'depth.body.pending > 10', then: resume}\n"
        "          - {when: 'true', then: baseline}\n"
    )

    assert spec.rules == (
        Rule(
            "depth.body.pending > 200",
            RuleAction(ActionKind.INTERVAL, interval_seconds=3, ttl_seconds=600),
        ),
        Rule("depth.body.pending > 100", RuleAction(ActionKind.INTERVAL, interval_seconds=30)),
        Rule("status == 503", RuleAction(ActionKind.PAUSE, for_seconds=300)),
        Rule("depth.body.pending > 50", RuleAction(ActionKind.RUN_NOW)),
        Rule("depth.body.pending > 10", RuleAction(ActionKind.RESUME)),
        Rule("true", RuleAction(ActionKind.BASELINE)),
    )


def test_without_rules_there_are_none() -> None:
    assert processor("").rules == ()


@pytest.mark.parametrize(
    ("then", "reason"),
    [
        (
            "speed_up",
            "unknown action 'speed_up'; the actions are interval, run_now, pause, resume, baseline",
        ),
        ("{faster: 2}", "unknown action 'faster'; the actions are"),
        ("interval", "interval needs a duration: then: {interval: 30s, ttl: 1h}"),
        ("pause", "pause needs how long: then: {pause: {for: 10m}}"),
        ("{pause: 10m}", "pause needs how long, and nothing else: then: {pause: {for: 10m}}"),
        ("{pause: {until: 10m}}", "pause needs how long, and nothing else"),
        ("{pause: {for: 99999999999d}}", "pause for: is more than ten years ahead"),
        ("{interval: soon}", "'soon' is not a duration"),
        ("{interval: 0}", "interval must be positive"),
        ("{interval: 30s, ttl: -1}", "ttl must be positive"),
        ("{interval: 30s, for: 1m}", "interval takes ttl only, not ['for']"),
        ("{run_now: true}", "run_now takes no argument: then: run_now"),
        ("[run_now]", "expected an action (interval, run_now, pause, resume, baseline)"),
        ("{interval: 1s}", "interval 1s is below min_interval 3s"),
        ("{interval: 1h}", "interval 3600s is above max_interval 120s"),
    ],
)
def test_a_bad_then_is_one_line_naming_the_rule(then: str, reason: str) -> None:
    message = error_of(
        "        rules:\n"
        "          - {when: 'true', then: resume}\n"
        f"          - {{when: 'true', then: {then}}}\n"
    )

    assert message.startswith(f"{WHERE} 'rules[1].then': {reason}")


@pytest.mark.parametrize(
    ("rule", "field", "reason"),
    [
        ("{then: resume}", "rules[0].when", "Field required"),
        ("{when: '', then: resume}", "rules[0].when", "String should have at least 1 character"),
        ("{when: 'true'}", "rules[0].then", "Field required"),
        ("{when: 'true', then: resume, else: pause}", "rules[0].else", "unknown field"),
    ],
)
def test_a_rule_without_its_parts_is_refused(rule: str, field: str, reason: str) -> None:
    assert error_of(f"        rules: [{rule}]\n") == f"{WHERE} '{field}': {reason}"


def test_a_dependant_has_no_schedule_a_rule_could_move() -> None:
    text = BASE.replace(
        "        interval: 10s\n        min_interval: 3s\n        max_interval: 2m\n",
        "        depends_on: [depth]\n",
    )
    for then in ("run_now", "{interval: 30s}"):
        with pytest.raises(InvalidConfig) as caught:
            parse_declarations(
                text + f"        rules: [{{when: 'true', then: {then}}}]\n", "jobs.yaml", []
            )
        action = then.strip("{}").split(":")[0]
        assert str(caught.value) == (
            f"{WHERE} 'rules[0].then': {action} moves a schedule, and an endpoint with "
            "depends_on runs after its upstreams"
        )
    [declaration] = parse_declarations(
        text + "        rules: [{when: 'true', then: {pause: {for: 1m}}}]\n", "jobs.yaml", []
    )
    assert declaration.endpoints[1].rules[0].then.kind is ActionKind.PAUSE


def test_damping_as_written() -> None:
    spec = processor(
        "        rules:\n"
        "          - {when: 'depth.body.pending > 200', then: resume, for: 30s, dwell: 5m}\n"
        "          - {when: 'true', then: baseline, urgent: true, for: 0}\n"
    )

    assert [(r.for_seconds, r.dwell_seconds, r.urgent) for r in spec.rules] == [
        (30, 300, False),
        (0, None, True),
    ]


@pytest.mark.parametrize(
    ("damping", "field", "reason"),
    [
        ("for: soon", "for", "'soon' is not a duration (seconds, or e.g. '30s', '5m', '1h30m')"),
        ("for: -1s", "for", "'-1s' is not a duration"),
        ("for: -1", "for", "Input should be greater than or equal to 0"),
        ("dwell: 2d", "dwell", "Input should be less than or equal to 86400"),
        ("dwell: [1m]", "dwell", "['1m'] is not a duration"),
        ("urgent: yes", "urgent", "Input should be a valid boolean"),
        ("urgent: 1", "urgent", "Input should be a valid boolean"),
        ("holds_for: 30s", "holds_for", "unknown field"),
    ],
)
def test_bad_damping_is_one_line_naming_the_rule(damping: str, field: str, reason: str) -> None:
    message = error_of(f"        rules: [{{when: 'true', then: resume, {damping}}}]\n")

    assert message.startswith(f"{WHERE} 'rules[0].{field}': {reason}"), message
