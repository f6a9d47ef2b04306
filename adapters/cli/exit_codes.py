"""The meaning of the CLI's exit codes, and which one an error exits with.

Apart from `runtime.py` (settings and the store) so that `main.py`, which every command imports,
and `cronpilot --help` do not import the settings, the store and SQLAlchemy's engine with it.
"""

from __future__ import annotations

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
