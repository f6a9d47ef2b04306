"""Settings for tests: the defaults of `adapters.settings`, without a `.env` file."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from cronpilot.adapters.bootstrap import guardrail_limits, retention
from cronpilot.adapters.settings import Settings
from cronpilot.domain.planning.guardrails import GuardrailLimits
from cronpilot.domain.runs.retention import Retention


def settings_for_tests(**overrides: Any) -> Settings:
    return Settings(_env_file=None, **overrides)  # type: ignore[call-arg]


def limits_for_tests(**overrides: Any) -> GuardrailLimits:
    """The guardrail limits of the default settings, with `overrides` (by field name)."""
    return replace(guardrail_limits(settings_for_tests()), **overrides)


def retention_for_tests(**overrides: Any) -> Retention:
    """The retention windows of the default settings, with `overrides` (by field name)."""
    return replace(retention(settings_for_tests()), **overrides)
