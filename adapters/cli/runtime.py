"""What every command shares: settings, logging, a store opened and closed around one action,
and the meaning of exit codes."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from cronpilot.adapters.bootstrap import build_waker, open_store
from cronpilot.adapters.logs import configure_logging
from cronpilot.adapters.settings import Settings, load_settings
from cronpilot.domain.errors import (
    AmbiguousId,
    ApprovalNotPending,
    CronpilotError,
    InvalidConfig,
    InvalidQuery,
    InvalidRunRequest,
    InvalidSchedule,
    InvalidTimeRange,
    InvalidTokenName,
    InvalidTokenTerms,
    NotFound,
    ProposalNotPending,
    RunFinished,
    StillDependedOn,
    StoreUnavailable,
    TokenExpired,
    UnsafeURL,
    ValueRejected,
)
from cronpilot.domain.ports import Store, Waker

T = TypeVar("T")

EXIT_OK = 0
EXIT_NOT_FOUND = 1
EXIT_BAD_INPUT = 2
EXIT_STORE_UNAVAILABLE = 3
EXIT_FAILED = 4
"""Anything else that went wrong: a conflict, a secret the key cannot decrypt, an abort."""
EXIT_RUN_FAILED = 5
"""`run --wait`: the run was recorded, and it did not succeed."""
EXIT_CODES_HELP = (
    "Exit codes: 0 ok, 1 not found, 2 bad input (options, settings, jobs file), "
    "3 database unavailable, 4 any other failure, 5 the run waited for did not succeed."
)


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


def exit_code(error: CronpilotError) -> int:
    if isinstance(error, NotFound):
        return EXIT_NOT_FOUND
    if isinstance(
        error,
        InvalidConfig
        | InvalidSchedule
        | InvalidRunRequest
        | InvalidTokenName
        | InvalidTokenTerms
        # An expired token given to `cronpilot mcp`: a setting to change.
        | TokenExpired
        | InvalidTimeRange
        | UnsafeURL
        | ValueRejected
        | StillDependedOn
        # Deciding a proposal (or an approval) that is decided already is a user's mistake,
        # not a failure.
        | ProposalNotPending
        | ApprovalNotPending
        | RunFinished
        | AmbiguousId
        | InvalidQuery,
    ):
        return EXIT_BAD_INPUT
    if isinstance(error, StoreUnavailable):
        return EXIT_STORE_UNAVAILABLE
    return EXIT_FAILED
