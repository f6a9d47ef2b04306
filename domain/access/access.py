"""Who may do what: API token scopes and the actor recorded on every write.

An actor is a short string kept beside what it did (a proposal's decider, a pause, the audit
log): `token:NAME` for an API token, `cli:USER@HOST` for someone at a terminal, and for what
cronpilot does itself `rules` (a response rule), `planner:NAME` (an analyst: `planner:freshness`,
`planner:llm:MODEL`) or `scheduler` (a pause after failures).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from cronpilot.domain.errors import OutOfReach


class Scope(StrEnum):
    """What a token may do; each scope includes the ones before it."""

    READ = "read"
    WRITE = "write"
    ADMIN = "admin"

    def includes(self, required: Scope) -> bool:
        return _RANK[self] >= _RANK[required]


_RANK = {Scope.READ: 0, Scope.WRITE: 1, Scope.ADMIN: 2}


@dataclass(frozen=True, slots=True)
class Reach:
    """The jobs a caller may see, handed to every query it asks: a query shows nothing of
    another job, and answers a name or id of one as it answers one that does not exist."""

    jobs: frozenset[str] | None = None
    """None: every job."""

    def holds(self, job: str) -> bool:
        return self.jobs is None or job in self.jobs

    def holds_node(self, node: str) -> bool:
        """Whether a tool graph node (`job` or `job/endpoint`) is of a job it holds."""
        return self.holds(node.partition("/")[0])

    @property
    def whole(self) -> bool:
        """Whether it holds every job, those made later included."""
        return self.jobs is None


EVERY_JOB = Reach()
"""The reach of the CLI's user, the workers, and a token limited to no job."""


@dataclass(frozen=True, slots=True)
class Principal:
    """The caller a request was authenticated as."""

    actor: str
    scope: Scope
    jobs: frozenset[str] | None = None
    """The jobs it may reach; None: every job."""

    def may(self, required: Scope) -> bool:
        return self.scope.includes(required)

    @property
    def reach(self) -> Reach:
        return Reach(self.jobs)

    def check_every_job(self) -> None:
        """Raises `OutOfReach` for a job-limited principal: what it asks for (apply a
        document, read the audit log, manage tokens) spans every job, and cannot be narrowed
        to some."""
        if self.jobs is not None:
            held = ", ".join(sorted(self.jobs))
            raise OutOfReach(
                self.actor, f"is limited to jobs {held}: this needs a token of every job"
            )


_TOKEN, _CLI = "token:", "cli:"


def token_actor(name: str) -> str:
    return f"{_TOKEN}{name}"


def cli_actor(user_at_host: str) -> str:
    return f"{_CLI}{user_at_host}"


RULES_ACTOR = "rules"
"""The response rules: the rules planner proposes under this name, and acts under it."""
SCHEDULER_ACTOR = "scheduler"
"""The scheduler, which pauses an endpoint itself after `pause_after` failures in a row."""


def planner_actor(proposer: str) -> str:
    """Who a planner's proposal acts as once applied (approved or not, the change is the
    planner's): `rules`, or `planner:` and the analyst's name."""
    return proposer if proposer == RULES_ACTOR else f"planner:{proposer}"


def by_person(actor: str | None) -> bool:
    """Whether `actor` is someone (a token's holder, a terminal's user), not cronpilot itself:
    what a person did, only a person undoes. None: recorded before every pause had an actor,
    when only cronpilot's own pauses had none."""
    return actor is not None and actor.startswith((_TOKEN, _CLI))
