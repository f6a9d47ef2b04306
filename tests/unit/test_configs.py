"""The workers' configs take each field from its own setting (`adapters.configs`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest

from cronpilot.adapters.configs import (
    from_settings,
    guardrail_limits,
    notifier_config,
    planner_config,
    retention,
    worker_config,
)
from cronpilot.domain.planning.guardrails import GuardrailLimits
from cronpilot.domain.runs.retention import Retention
from cronpilot.planner.config import PlannerConfig
from cronpilot.scheduler.config import WorkerConfig
from cronpilot.scheduler.notifier import NotifierConfig
from tests.support.settings import settings_for_tests

# Every setting a config reads, each with a value of its own, none the default.
SETTINGS = settings_for_tests(
    worker_id="w-7",
    concurrency=11,
    batch_size=12,
    lease_seconds=61,
    grace_seconds=3.5,
    max_sleep_seconds=4.5,
    claim_ahead_seconds=0.25,
    dag_sweep_seconds=6.5,
    cancel_poll_seconds=0.75,
    notify_concurrency=13,
    notify_lease_seconds=62,
    notify_poll_seconds=7.5,
    notify_timeout_seconds=8.5,
    planner_batch_size=14,
    planner_lease_seconds=63,
    planner_poll_seconds=9.5,
    planner_history_runs=15,
    planner_min_look_again_seconds=64,
    planner_backoff_seconds=65,
    planner_backoff_cap_seconds=66,
    planner_max_pause_seconds=67,
    planner_max_changes_per_hour=16,
    planner_max_hint_ttl_seconds=68,
    planner_proposal_ttl_seconds=69,
    planner_rejection_cooldown_seconds=70,
    rules_dwell_seconds=71,
    planner_keep_quiet_sessions=True,
    planner_brief_tokens=17,
    retention_sessions_days=1,
    retention_rule_evaluations_days=2,
    retention_proposals_days=3,
    retention_notifications_days=4,
    retention_audit_days=5,
    retention_approvals_days=6,
    retention_runs_days=7,
)

LIMITS = GuardrailLimits(
    max_pause_seconds=67,
    max_changes_per_hour=16,
    max_hint_ttl_seconds=68,
    pending_ttl_seconds=69,
    rejection_cooldown_seconds=70,
    dwell_seconds=71,
)


def test_the_scheduler_worker_takes_the_worker_settings() -> None:
    assert worker_config(SETTINGS) == WorkerConfig(
        worker_id="w-7",
        concurrency=11,
        batch_size=12,
        lease_seconds=61,
        grace_seconds=3.5,
        max_sleep_seconds=4.5,
        claim_ahead_seconds=0.25,
        dag_sweep_seconds=6.5,
        cancel_poll_seconds=0.75,
    )


def test_the_notifier_takes_the_notify_settings() -> None:
    assert notifier_config(SETTINGS) == NotifierConfig(
        worker_id="w-7",
        concurrency=13,
        lease_seconds=62,
        poll_seconds=7.5,
        timeout_seconds=8.5,
    )


def test_the_planner_takes_the_planner_settings() -> None:
    assert guardrail_limits(SETTINGS) == LIMITS
    assert planner_config(SETTINGS) == PlannerConfig(
        worker_id="w-7",
        batch_size=14,
        lease_seconds=63,
        poll_seconds=9.5,
        history_runs=15,
        min_look_again_seconds=64,
        backoff_seconds=65,
        backoff_cap_seconds=66,
        grace_seconds=3.5,
        limits=LIMITS,
        rule_dwell_seconds=71,
        keep_quiet=True,
        brief_tokens=17,
    )


def test_retention_takes_the_days_of_each_table() -> None:
    assert retention(SETTINGS) == Retention(
        sessions=timedelta(days=1),
        rule_evaluations=timedelta(days=2),
        proposals=timedelta(days=3),
        notifications=timedelta(days=4),
        audit=timedelta(days=5),
        approvals=timedelta(days=6),
        runs=timedelta(days=7),
    )


@dataclass(frozen=True)
class _Unset:
    worker_id: str
    nothing_names_this: float


def test_a_field_that_no_setting_names_and_no_default_covers_fails() -> None:
    with pytest.raises(TypeError, match="nothing_names_this"):
        from_settings(_Unset, SETTINGS)
    assert from_settings(_Unset, SETTINGS, nothing_names_this=1.0) == _Unset("w-7", 1.0)
