"""Who may do what: API token scopes and the actor recorded on every write.

An actor is a short string kept beside what it did (a proposal's decider, a pause, the audit
log): `token:NAME` for an API token, `cli:USER@HOST` for someone at a terminal, and for what
cronpilot does itself `rules` (a response rule), `planner:NAME` (an analyst: `planner:heuristic`,
`planner:llm:MODEL`) or `scheduler` (a pause after failures).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum


class Scope(StrEnum):
    """What a token may do; each scope includes the ones before it."""

    READ = "read"
    WRITE = "write"
    ADMIN = "admin"

    def includes(self, required: Scope) -> bool:
        return _RANK[self] >= _RANK[required]


_RANK = {Scope.READ: 0, Scope.WRITE: 1, Scope.ADMIN: 2}


@dataclass(frozen=True, slots=True)
class Principal:
    """The caller a request was authenticated as."""

    actor: str
    scope: Scope
    jobs: frozenset[str] | None = None
    """The jobs it may reach; None: every job."""

    def may(self, required: Scope) -> bool:
        return self.scope.includes(required)

    def out_of_reach(self, jobs: Iterable[str]) -> list[str]:
        """Those of `jobs` this principal may not reach, sorted (none for an unlimited one)."""
        if self.jobs is None:
            return []
        return sorted(set(jobs) - self.jobs)


@dataclass(frozen=True, slots=True)
class Reach:
    """What one request or tool call names, by kind: the jobs it touches are found from
    these (`usecases.access.confine`)."""

    jobs: tuple[str, ...] = ()
    endpoints: tuple[str, ...] = ()
    """Refs (`job/endpoint`) or ids."""
    runs: tuple[str, ...] = ()
    proposals: tuple[str, ...] = ()
    sessions: tuple[str, ...] = ()
    approvals: tuple[str, ...] = ()


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
