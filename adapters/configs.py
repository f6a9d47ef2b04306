"""The workers' configs, made from the settings, which hold every default (`adapters.settings`).

A config field takes the setting of its name with the config's prefix (`planner_batch_size` for
`PlannerConfig.batch_size`), or of its bare name when listed as shared (`worker_id`); only the
fields whose setting is named otherwise, or built from several, are given by hand. A field that
no setting names keeps its default, and one without a default fails loudly here.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import fields
from datetime import timedelta
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from cronpilot.adapters.settings import Settings
    from cronpilot.domain.planning.guardrails import GuardrailLimits
    from cronpilot.domain.runs.retention import Retention
    from cronpilot.planner.config import PlannerConfig
    from cronpilot.scheduler.config import WorkerConfig
    from cronpilot.scheduler.notifier import NotifierConfig

Config = TypeVar("Config", bound="DataclassInstance")


def from_settings(
    config: type[Config],
    settings: Settings,
    prefix: str = "",
    *,
    shared: Collection[str] = (),
    **given: object,
) -> Config:
    """`config` with each field not `given` read from the setting `prefix + name` (`name` for
    the `shared` fields)."""
    known = type(settings).model_fields
    values = dict(given)
    for field in fields(config):
        name = field.name if field.name in shared else prefix + field.name
        if field.name not in values and name in known:
            values[field.name] = getattr(settings, name)
    return config(**values)


def worker_config(settings: Settings) -> WorkerConfig:
    """The scheduler worker's config."""
    from cronpilot.scheduler.config import WorkerConfig

    return from_settings(WorkerConfig, settings)


def notifier_config(settings: Settings) -> NotifierConfig:
    """The alerts notifier's config (`notify_*`)."""
    from cronpilot.scheduler.notifier import NotifierConfig

    return from_settings(NotifierConfig, settings, "notify_", shared=("worker_id", "public_url"))


def guardrail_limits(settings: Settings) -> GuardrailLimits:
    """The planner's guardrails (`planner_max_*`, …)."""
    from cronpilot.domain.planning.guardrails import GuardrailLimits

    return from_settings(
        GuardrailLimits,
        settings,
        "planner_",
        pending_ttl_seconds=settings.planner_proposal_ttl_seconds,
        dwell_seconds=settings.rules_dwell_seconds,
    )


def planner_config(settings: Settings) -> PlannerConfig:
    """The planner worker's config (`planner_*`)."""
    from cronpilot.planner.config import PlannerConfig

    return from_settings(
        PlannerConfig,
        settings,
        "planner_",
        shared=("worker_id", "grace_seconds"),
        limits=guardrail_limits(settings),
        rule_dwell_seconds=settings.rules_dwell_seconds,
        keep_quiet=settings.planner_keep_quiet_sessions,
    )


def retention(settings: Settings) -> Retention:
    """How long each growing table keeps its rows (`retention_*_days`; runs: `retention_runs`,
    per endpoint)."""
    from cronpilot.domain.runs.retention import Retention

    return Retention(
        **{
            field.name: timedelta(days=getattr(settings, f"retention_{field.name}_days"))
            for field in fields(Retention)
        }
    )
