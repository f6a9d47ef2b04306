"""Reporting a store outage once: an outage fails every run in flight and every lease due, and
one warning says so; the rest are debug lines until the store answers again."""

from __future__ import annotations

import logging

from cronpilot.domain.errors import StoreUnavailable
from cronpilot.domain.log_extra import LogAction, log_extra
from cronpilot.domain.runs.outage import described

# The worker's parts log as the worker: one logger to follow (or silence) a scheduler by.
log = logging.getLogger(__name__)


class StoreHealth:
    def __init__(self) -> None:
        self.down = False
        """A store failure has been reported and no store call has succeeded since."""

    def failed(
        self,
        error: StoreUnavailable,
        action: LogAction,
        message: str,
        *args: object,
        **fields: object,
    ) -> None:
        """Report a store failure met by one run or lease: a warning line for the first of an
        outage, a debug line for the others."""
        level = logging.DEBUG if self.down else logging.WARNING
        self.down = True
        log.log(
            level, f"{message} (%s)", *args, described(error), extra=log_extra(action, **fields)
        )

    def answered(self) -> None:
        if self.down:
            self.down = False
            log.info("store reachable again", extra=log_extra("store_available"))
