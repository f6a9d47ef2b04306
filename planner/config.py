"""What a planner worker is told by the composition root."""

from __future__ import annotations

from dataclasses import dataclass, field

from cronpilot.domain.guardrails import GuardrailLimits


@dataclass(frozen=True, slots=True)
class PlannerConfig:
    worker_id: str
    batch_size: int = 10
    lease_seconds: float = 300.0
    """Longer than any session: a dead worker's endpoints wait at most this long."""
    poll_seconds: float = 5.0
    history_runs: int = 20
    """Runs behind the health figures of the prompt."""
    backoff_seconds: float = 30.0
    """After a failed session the endpoint waits this long, doubling per failure…"""
    backoff_cap_seconds: float = 3600.0
    """…up to this."""
    grace_seconds: float = 10.0
    """On stop, how long (real time) analyses under way may still finish; then their LLM calls
    are cut short and the sessions recorded as failed."""
    paste_latest: bool = False
    """Paste the latest responses into the prompt instead of offering query tools (only for
    the token-economy benchmark)."""
    limits: GuardrailLimits = field(default_factory=GuardrailLimits)
