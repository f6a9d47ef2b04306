"""How many slots a scheduler worker claims now: a pure policy over plain values, so that every
gate that holds a claim back is in one place and tested with tables (tests/integration/scheduler/
test_admission.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Admission:
    concurrency: int
    """Calls in flight at once: slots calling or waiting for their due time, DAG dependants
    included."""
    batch_size: int
    """The most slots one claim takes."""

    @property
    def low_water(self) -> int:
        """While a backlog waits and the quiet time lasts, no claim of fewer slots than this: a
        round trip per freed call would cost more than the call."""
        return max(1, min(self.batch_size, self.concurrency) // 10)

    def room(self, calling: int, recording: int) -> int:
        """How many more slots may be claimed: `concurrency` calls, plus as many runs again
        being recorded (they hold no call, and recording them overlaps new calls)."""
        return min(self.concurrency - calling, 2 * self.concurrency - calling - recording)

    def to_claim(self, *, calling: int, recording: int, backlog: bool, quiet: bool) -> int:
        """How many slots to claim now: as many as there is room for, up to a batch; none while
        a `backlog` waits (the last claim came back full), the `quiet` time after it lasts and
        less room than `low_water` is free."""
        room = self.room(calling, recording)
        if room <= 0 or (backlog and quiet and room < self.low_water):
            return 0
        return min(self.batch_size, room)
