"""What one scheduler worker is told: who it is and how much it may take on at once."""

from __future__ import annotations

from dataclasses import dataclass

from cronpilot.domain.errors import InvalidConfig


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    worker_id: str
    concurrency: int = 100
    """Calls in flight at once."""
    batch_size: int = 100
    """Endpoints claimed per round trip to the store."""
    lease_seconds: float = 60.0
    """How long a claim stays ours without news; long calls extend it at half-time."""
    grace_seconds: float = 10.0
    """On stop, how long (real time) in-flight calls may still finish before they are abandoned."""
    max_sleep_seconds: float = 5.0
    """Longest idle sleep: only a guard against wake-ups missed from other processes."""
    claim_ahead_seconds: float = 0.0
    """Claim slots up to this long before they fall due, then call each at its due time: the
    claim's round trip is then paid before the slot rather than out of its lateness. Claims
    also come at most every half of it (unless a batch comes back full), so that a steady
    stream of slots is claimed in batches rather than one round trip per slot. 0: claim each
    slot once due."""
    dag_sweep_seconds: float = 5.0
    """How often to look for DAG dependants that became ready while leased (rare): a round trip
    that every claim would otherwise pay."""

    def __post_init__(self) -> None:
        if min(self.concurrency, self.batch_size, self.lease_seconds, self.max_sleep_seconds) <= 0:
            raise InvalidConfig("worker", "concurrency, batch, lease and sleep must be positive")
        if self.grace_seconds < 0 or self.claim_ahead_seconds < 0:
            raise InvalidConfig("worker", "grace and claim-ahead must not be negative")
        if self.claim_ahead_seconds >= self.lease_seconds / 2:
            raise InvalidConfig("worker", "claim-ahead must be shorter than half the lease")
