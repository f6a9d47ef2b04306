"""No telemetry: what the workers report to when metrics are off (the default)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cronpilot.domain.ports.telemetry import Telemetry

# For annotations only: `NO_TELEMETRY` is every worker's default, the CLI's included.
if TYPE_CHECKING:
    from cronpilot.domain.alerts.alerts import Notification
    from cronpilot.domain.model import Claim, Endpoint, Recorded
    from cronpilot.domain.planning.approvals import ApprovalState
    from cronpilot.domain.planning.controllers import Controller
    from cronpilot.domain.planning.guardrails import GuardrailRule
    from cronpilot.domain.planning.planning import AnalysisSession, ProposalStatus
    from cronpilot.domain.ports.telemetry import Delivery, WorkerLoop
    from cronpilot.domain.rules.rules import RuleOutcome


class NoTelemetry(Telemetry):
    def loop_turned(self, loop: WorkerLoop) -> None:
        pass

    def claimed(self, count: int, seconds: float) -> None:
        pass

    def recorded(self, claim: Claim, recorded: Recorded) -> None:
        pass

    def lease_lost(self, endpoint: Endpoint) -> None:
        pass

    def reaped(self, count: int) -> None:
        pass

    def analysed(self, endpoint: Endpoint, session: AnalysisSession) -> None:
        pass

    def passed_quietly(self, endpoint: Endpoint, session: AnalysisSession) -> None:
        pass

    def held_back(self, endpoint: Endpoint, by: Controller) -> None:
        pass

    def proposed(
        self, status: ProposalStatus, refused_by: GuardrailRule | None = None, count: int = 1
    ) -> None:
        pass

    def drifted(self, endpoint: Endpoint, events: int) -> None:
        pass

    def rule_evaluated(self, endpoint: Endpoint, outcome: RuleOutcome) -> None:
        pass

    def notified(self, notification: Notification, outcome: Delivery) -> None:
        pass

    def approval_decided(self, state: ApprovalState) -> None:
        pass


NO_TELEMETRY = NoTelemetry()
