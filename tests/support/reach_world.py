"""Two jobs with one of everything each, for the walks of a token limited to one of them
(`tests/integration/api/test_reach_walk.py`): runs (finished with a body, queued), an approval a
gated dependant waits on, a proposal with its notification, a failed alert and one the DAG held, an
analysis session, a learnt schema, graph edges inside each job and one across them, webhooks,
quiet periods and a limit shared by both jobs. The other job's names are words found
nowhere else, so that any appearance of them, or of its ids, in an answer is a leak."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from cronpilot.adapters.jobs_file import parse_declarations
from cronpilot.adapters.wake import InProcessWaker
from cronpilot.domain.access.access import Scope
from cronpilot.domain.alerts.alerts import AlertEvent, Notification, NotificationStatus
from cronpilot.domain.graph.graph import EdgeSighting, EdgeSource, EdgeType
from cronpilot.domain.model import Endpoint, Finish, PlannerMode, Response, new_id
from cronpilot.domain.planning.planning import (
    AnalysisOutcome,
    AnalysisSession,
    Proposal,
    ProposalDraft,
    ProposalKind,
    ProposalStatus,
    SessionStatus,
)
from cronpilot.domain.ports import Store
from cronpilot.usecases.access import create_token
from cronpilot.usecases.declarations import apply_declarations
from cronpilot.usecases.proposals import ProposalDesk, Proposer
from cronpilot.usecases.run_requests import request_run
from cronpilot.usecases.schema_learning import rebuild_schema
from tests.support.finishing import LEASE_SECONDS, record_one
from tests.support.settings import limits_for_tests

OWN = ("shop", "stock", "prices")
FOREIGN = ("vaultx", "ledgerq", "sealedz")
"""A job and its two endpoints (the second a gated dependant of the first)."""

_DOCUMENT = """
limits:
  walk-api: {{concurrency: 5}}
jobs:
  - name: {0}
    description: the {0} job
    notify: ["https://hooks.example.com/{0}"]
    limit: walk-api
    quiet:
      - {{dates: [2030-12-25]}}
    endpoints:
      - name: {1}
        description: fetch the {1} figures
        url: https://example.com/{0}/{1}
        interval: 60s
      - name: {2}
        description: the {2} after the {1}
        url: https://example.com/{0}/{2}
        depends_on: [{1}]
        approval: required
"""
_HELD = Proposer("heuristic", PlannerMode.REVIEW, None)


@dataclass(frozen=True)
class JobRecords:
    """The names and ids of everything one job holds."""

    job: str
    endpoints: tuple[str, str]
    """`job/endpoint` refs: the root, then its gated dependant."""
    endpoint_ids: tuple[str, str]
    run: str
    """A finished run of the root, with a body."""
    queued: str
    """A queued manual run of the root."""
    approval: str
    proposal: str
    session: str
    notification: str
    applied: str
    """A proposal applied, with `notification`."""
    failed: str
    """An alert of the root given up after its attempts."""
    held: str
    """An alert of the dependant that the root held (`held_by`)."""

    @property
    def names(self) -> list[str]:
        return [self.job, *(ref.split("/")[1] for ref in self.endpoints)]

    @property
    def ids(self) -> list[str]:
        return [
            *self.endpoint_ids,
            self.run,
            self.queued,
            self.approval,
            self.proposal,
            self.session,
            self.notification,
            self.applied,
            self.failed,
            self.held,
        ]


async def _fill(store: Store, names: tuple[str, str, str], now: datetime) -> JobRecords:
    job, first, second = names
    declared = parse_declarations(_DOCUMENT.format(*names), f"{job}.yaml", [], env={})
    waker = InProcessWaker()
    try:
        await apply_declarations(
            store.unit_of_work, waker, declared, f"{job}.yaml", actor="cli:walk", now=now
        )
        root = await store.catalog.get_endpoint(f"{job}/{first}")
        dependant = await store.catalog.get_endpoint(f"{job}/{second}")
        claims = [
            c for c in await store.claims.claim_due(now, "w1", 60, 10) if c.endpoint.id == root.id
        ]
        body = {f"{first}_total": 3, "note": f"{job} figures"}
        recorded = await record_one(
            store.claims, Finish(claims[0], "w1", Response(200, body=body), now, LEASE_SECONDS)
        )
        [approval] = recorded.approvals
        later = now + timedelta(seconds=1)
        queued = await request_run(store.unit_of_work, waker, root.ref, "cli:walk", later)
    finally:
        await waker.close()
    await rebuild_schema(store.unit_of_work, store.reading, root, now)
    desk = ProposalDesk(store.unit_of_work, store.reading, None, limits_for_tests())
    draft = ProposalDraft(ProposalKind.INTERVAL, f"{job} is quiet", 120.0, ttl_seconds=600)
    proposal = await desk.propose(draft, root.id, _HELD, now)
    claim = await store.planner.claim_endpoint(root.ref, now, "p1", 60)
    session = AnalysisSession(
        new_id(), root.id, root.job_id, "heuristic", now, now, SessionStatus.SUBMITTED
    )
    outcome = AnalysisOutcome(None, False, now + timedelta(minutes=5), failed=False)
    await store.planner.finish_analysis(claim, "p1", session, outcome, now)
    notification = Notification(
        new_id(), root.id, root.job_id, AlertEvent.FAILING, "https://h.example", {}, now, now
    )
    applied = Proposal(
        new_id(),
        dependant.id,
        dependant.job_id,
        ProposalKind.INTERVAL,
        f"{job} steady",
        "heuristic",
        now,
        ProposalStatus.APPLIED,
        interval_seconds=60,
    )
    await store.planner.add_proposal(applied, [notification])
    failed, held = _alerts(root, dependant, now)
    await store.notifications.add([failed, held])
    return JobRecords(
        job,
        (root.ref, dependant.ref),
        (root.id, dependant.id),
        recorded.run.id,
        queued.id,
        approval.id,
        proposal.id,
        session.id,
        notification.id,
        applied.id,
        failed.id,
        held.id,
    )


def _alerts(root: Endpoint, dependant: Endpoint, now: datetime) -> tuple[Notification, ...]:
    """A `failing` alert of `root` that failed for good, and one of `dependant` held by it."""
    url = root.spec.notify[0]
    failing = AlertEvent.FAILING
    return (
        Notification(
            new_id(),
            root.id,
            root.job_id,
            failing,
            url,
            {},
            now,
            now,
            status=NotificationStatus.FAILED,
            attempts=5,
            last_error="HTTP 500",
        ),
        Notification(
            new_id(),
            dependant.id,
            dependant.job_id,
            failing,
            url,
            {},
            now,
            now,
            status=NotificationStatus.HELD,
            held_by=root.ref,
        ),
    )


@dataclass(frozen=True)
class ReachWorld:
    own: JobRecords
    foreign: JobRecords
    secret: str
    """Of `walker`, an admin token limited to the own job."""

    @property
    def markers(self) -> list[str]:
        """What of the other job no answer to the walker may hold."""
        return [*self.foreign.names, *self.foreign.ids]


async def reach_world(store: Store, now: datetime) -> ReachWorld:
    own = await _fill(store, OWN, now)
    foreign = await _fill(store, FOREIGN, now)
    across = EdgeSighting(
        own.endpoints[0], foreign.endpoints[0], EdgeType.PROVIDES, EdgeSource.INFERRED, True
    )
    inside = [
        EdgeSighting(r.endpoints[0], r.endpoints[1], EdgeType.SEQUENCE, EdgeSource.INFERRED, True)
        for r in (own, foreign)
    ]
    await store.graph.record([across, *inside], now)
    _, secret = await create_token(
        store.unit_of_work, "walker", Scope.ADMIN, "cli:walk", now, jobs=[own.job]
    )
    return ReachWorld(own, foreign, secret)
