"""What a planner worker is told, built in one place from the settings
(`adapters.configs.planner_config`), which hold every default (`adapters.settings`)."""

from __future__ import annotations

from dataclasses import dataclass

from cronpilot.domain.planning.guardrails import GuardrailLimits


@dataclass(frozen=True, slots=True)
class PlannerConfig:
    worker_id: str
    batch_size: int
    lease_seconds: float
    """A dead worker's endpoints wait at most this long; a session ends within
    `worker.SESSION_SHARE` of it (`worker.session_deadline`)."""
    poll_seconds: float
    history_runs: int
    """Runs behind the health figures of the prompt."""
    min_look_again_seconds: float
    """An analysis's `next_analysis_in_seconds` is raised to at least this."""
    backoff_seconds: float
    """After a failed session the endpoint waits this long, doubling per failure…"""
    backoff_cap_seconds: float
    """…up to this."""
    grace_seconds: float
    """On stop, how long (real time) analyses under way may still finish; then their LLM calls
    are cut short and the sessions recorded as failed."""
    limits: GuardrailLimits
    rule_dwell_seconds: float
    """How long a rule-made change stands before a rule may replace it, unless the rule says
    (`dwell:`; `domain.rules.rule_damping`)."""
    brief_tokens: int
    """Tokens the brief spends on its siblings' summary lines, the most relevant first."""
    keep_quiet: bool = False
    """Store quiet passes' sessions too (`domain.schedule.quiet_passes`)."""
    paste_latest: bool = False
    """Paste the latest responses into the prompt instead of offering query tools (only for
    the token-economy benchmark; no setting)."""
