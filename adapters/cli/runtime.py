"""What every command shares: settings, logging, and a store opened and closed around one
action. The meaning of exit codes is in `exit_codes.py`, which the top-level CLI imports alone."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from cronpilot.adapters.bootstrap import build_waker, open_store
from cronpilot.adapters.logs import configure_logging
from cronpilot.adapters.settings import Settings, load_settings
from cronpilot.domain.ports import Store, Waker

T = TypeVar("T")


def cli_settings() -> Settings:
    """Settings from the environment, with logging on stderr at the configured level."""
    settings = load_settings()
    configure_logging(settings.log_level, settings.log_format)
    return settings


def admin_settings() -> Settings:
    """Settings for a one-shot admin command: it reports its own failure in one line, so only
    errors are logged unless CRONPILOT_LOG_LEVEL asks for more."""
    settings = load_settings()
    level = settings.log_level if "log_level" in settings.model_fields_set else "ERROR"
    configure_logging(level, settings.log_format)
    return settings


def with_store(settings: Settings, action: Callable[[Store], Awaitable[T]]) -> T:
    """Run `action` against a freshly opened store, closing it whatever happens."""

    async def main() -> T:
        store = await open_store(settings)
        try:
            return await action(store)
        finally:
            await store.close()

    return asyncio.run(main())


async def with_waker(settings: Settings, action: Callable[[Waker], Awaitable[T]]) -> T:
    """Run `action` with a waker of the store's schedulers (for a use case to tell them that
    an endpoint may now be due earlier than they planned), closed after."""
    waker = build_waker(settings)
    try:
        return await action(waker)
    finally:
        await waker.close()
