"""One controller per endpoint at a time (`domain.planning.controllers`, decision 0048)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cronpilot.domain.model import Endpoint, EndpointSpec, IntervalHint, Pause, Schedule
from cronpilot.domain.planning.controllers import Controller, held, holder
from cronpilot.domain.planning.planning import Proposal, ProposalKind, ProposalStatus

NOW = datetime(2026, 11, 29, 3, 35, tzinfo=UTC)
RULE_REASON = "proposed by rule 1 of queue/processor: depth.body.pending > 200 = true"
SPEC = EndpointSpec("processor", "https://example.com", Schedule(interval_seconds=10))


def _ago(seconds: float) -> datetime:
    return NOW - timedelta(seconds=seconds)


def _applied(ago: float, interval: float, by: str, ttl: float = 600) -> Proposal:
    return Proposal(
        id=f"p{ago:g}",
        endpoint_id="e",
        job_id="j",
        kind=ProposalKind.INTERVAL,
        reason=RULE_REASON if by == "rules" else "the last 3 responses were identical",
        proposed_by=by,
        created_at=_ago(ago),
        status=ProposalStatus.APPLIED,
        interval_seconds=interval,
        ttl_seconds=ttl,
        decided_by="auto",
        decided_at=_ago(ago),
    )


def _endpoint(hint: Proposal | None = None, pause: Pause | None = None) -> Endpoint:
    interval = None
    if hint is not None and hint.interval_seconds is not None and hint.ttl_seconds is not None:
        expires = _ago(0) + timedelta(seconds=hint.ttl_seconds) - (NOW - hint.created_at)
        interval = IntervalHint(hint.interval_seconds, expires, hint.reason)
    return Endpoint("e", "j", "queue", SPEC, interval_hint=interval, pause=pause)


def test_a_rule_whose_hint_is_in_force_holds_the_planner_off() -> None:
    """The issue's 03:32:14: a rule set 2 s for 10 min; 21 s later the planner would relax."""
    rule = _applied(21, 2, "rules")
    endpoint = _endpoint(rule)

    found = holder(endpoint, [rule], NOW)
    assert found is not None and found.controller is Controller.RULE
    assert found.by == "rule 1 of queue/processor"
    waits = held(Controller.PLANNER, endpoint, [rule], NOW, 120)
    assert waits is not None
    assert waits.text == f"held by rule 1 of queue/processor until {_ago(21 - 600).isoformat()}"
    # Once its ttl has run out, the planner steers again.
    assert held(Controller.PLANNER, endpoint, [rule], NOW + timedelta(seconds=600), 120) is None


def test_a_lapsed_or_replaced_rule_hint_holds_nothing() -> None:
    rule = _applied(300, 2, "rules")
    planner = _applied(200, 60, "heuristic", ttl=3600)
    assert holder(_endpoint(planner), [planner, rule], NOW) is None


def test_every_change_dwells_for_the_other_controllers() -> None:
    planner = _applied(30, 4, "heuristic", ttl=3600)
    endpoint = _endpoint(planner)

    assert held(Controller.PLANNER, endpoint, [planner], NOW, 120) is None
    waits = held(Controller.RULE, endpoint, [planner], NOW, 120)
    assert waits is not None and waits.until == _ago(30 - 120)
    assert "by the planner (heuristic)" in waits.text
    assert held(Controller.RULE, endpoint, [planner], NOW, 20) is None


def test_an_admins_pause_holds_rules_and_planner_and_never_the_admin() -> None:
    pause = Pause("deploy", NOW + timedelta(hours=1), "cli:ann@web-1")
    endpoint = _endpoint(pause=pause)
    for by in (Controller.RULE, Controller.PLANNER):
        waits = held(by, endpoint, [], NOW, 120)
        assert waits is not None and waits.by is Controller.ADMIN
        assert waits.text.startswith("held by cli:ann@web-1 until ")
    assert held(Controller.ADMIN, endpoint, [], NOW, 120) is None
    mine = _endpoint(pause=Pause("quiet", NOW + timedelta(hours=1), "planner:heuristic"))
    assert holder(mine, [], NOW) is None
