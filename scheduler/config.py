"""What one scheduler worker is told: who it is and how much it may take on at once.

Built in one place, from the settings (`adapters.configs.worker_config`), which hold every
default (`adapters.settings`): nothing here repeats them.
"""

from __future__ import annotations

from dataclasses import dataclass

from cronpilot.domain.errors import InvalidConfig


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    worker_id: str
    concurrency: int
    """Calls in flight at once, DAG dependants included."""
    batch_size: int
    """Endpoints claimed per round trip to the store."""
    lease_seconds: float
    """How long a claim stays ours without news; long calls extend it at half-time."""
    grace_seconds: float
    """On stop, how long (real time) in-flight calls may still finish before they are abandoned."""
    max_sleep_seconds: float
    """Longest idle sleep: only a guard against wake-ups missed from other processes."""
    claim_ahead_seconds: float
    """Claim slots up to this long before they fall due, then call each at its due time: the
    claim's round trip is then paid before the slot rather than out of its lateness. Claims
    also come at most every half of it (unless a batch comes back full), so that a steady
    stream of slots is claimed in batches rather than one round trip per slot. 0: claim each
    slot once due."""
    dag_sweep_seconds: float
    """How often to look for DAG dependants that became ready while leased (rare): a round trip
    that every claim would otherwise pay."""
    cancel_poll_seconds: float
    """How often, while it holds runs, to look for cancels asked for them (`runs cancel`)."""

    def __post_init__(self) -> None:
        if (
            min(
                self.concurrency,
                self.batch_size,
                self.lease_seconds,
                self.max_sleep_seconds,
                self.cancel_poll_seconds,
            )
            <= 0
        ):
            raise InvalidConfig(
                "worker", "concurrency, batch, lease, sleep and cancel poll must be positive"
            )
        if self.grace_seconds < 0 or self.claim_ahead_seconds < 0:
            raise InvalidConfig("worker", "grace and claim-ahead must not be negative")
        if self.claim_ahead_seconds >= self.lease_seconds / 2:
            raise InvalidConfig("worker", "claim-ahead must be shorter than half the lease")
