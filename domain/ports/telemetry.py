"""What the workers report for metrics."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from cronpilot.domain.alerts.alerts import Notification
    from cronpilot.domain.model import Claim, Endpoint, Recorded
    from cronpilot.domain.planning.approvals import ApprovalState
    from cronpilot.domain.planning.controllers import Controller
    from cronpilot.domain.planning.guardrails import GuardrailRule
    from cronpilot.domain.planning.planning import AnalysisSession, ProposalStatus
    from cronpilot.domain.rules.rules import RuleOutcome


WorkerLoop = Literal["scheduler", "planner"]
Delivery = Literal["delivered", "retry", "failed"]


class Telemetry(Protocol):
    """What the workers report as they work, for metrics (`adapters.metrics`); `NoTelemetry`
    (`domain.runs.telemetry`) where metrics are off.

    Each method is called on the hot path or beside it: it must return at once, never raise
    and never wait. What it is told may carry ids, URLs and error text, but what it counts by
    is bounded: job and endpoint names, and the enums of the domain."""

    def loop_turned(self, loop: WorkerLoop) -> None:
        """A worker's loop went round once (readiness: the loop is not stuck)."""
        ...

    def claimed(self, count: int, seconds: float) -> None:
        """A claim round trip took `seconds` and brought `count` slots."""
        ...

    def recorded(self, claim: Claim, recorded: Recorded) -> None:
        """The run of `claim` was recorded, with the DAG dependants it skipped."""
        ...

    def lease_lost(self, endpoint: Endpoint) -> None:
        """A run's lease was lost (another worker or the reaper took its endpoint)."""
        ...

    def reaped(self, count: int) -> None:
        """The reaper abandoned `count` runs of dead workers."""
        ...

    def analysed(self, endpoint: Endpoint, session: AnalysisSession) -> None:
        """The planner recorded an analysis session (its tool calls and tokens)."""
        ...

    def passed_quietly(self, endpoint: Endpoint, session: AnalysisSession) -> None:
        """A planner pass proposed nothing and found nothing new: its session was not stored
        (`domain.schedule.quiet_passes`), but its tool calls and tokens were spent."""
        ...

    def held_back(self, endpoint: Endpoint, by: Controller) -> None:
        """What the planner would have changed on the endpoint waits: `by` holds it, or its
        last change (by `by`) dwells (`domain.planning.controllers`)."""
        ...

    def proposed(
        self, status: ProposalStatus, refused_by: GuardrailRule | None = None, count: int = 1
    ) -> None:
        """`count` proposals were recorded or decided with `status` (applied, held, refused
        by the guardrail `refused_by`, rejected, expired)."""
        ...

    def drifted(self, endpoint: Endpoint, events: int) -> None:
        """Learning the endpoint's output schema recorded `events` changes of shape."""
        ...

    def rule_evaluated(self, endpoint: Endpoint, outcome: RuleOutcome) -> None:
        """The rules planner evaluated one of the endpoint's rules: it did not hold, its action
        was proposed, already stood or was refused, or it could not be evaluated (`error`)."""
        ...

    def notified(self, notification: Notification, outcome: Delivery) -> None:
        """A webhook delivery ended: delivered, to be retried, or given up."""
        ...

    def approval_decided(self, state: ApprovalState) -> None:
        """An approval was approved, rejected or expired (those asked for are counted from
        `recorded`)."""
        ...
