"""Settings for tests: the defaults of `adapters.settings`, without a `.env` file."""

from __future__ import annotations

from typing import Any

from cronpilot.adapters.settings import Settings


def settings_for_tests(**overrides: Any) -> Settings:
    return Settings(_env_file=None, **overrides)  # type: ignore[call-arg]
