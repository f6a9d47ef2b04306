"""Who may do what: API token scopes and the actor recorded on every write.

An actor is a short string kept beside what it did (a proposal's decider, a pause, the audit
log): `token:NAME` for an API token, `cli:USER@HOST` for someone at a terminal.
"""

from __future__ import annotations

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

    def may(self, required: Scope) -> bool:
        return self.scope.includes(required)


def token_actor(name: str) -> str:
    return f"token:{name}"


def cli_actor(user_at_host: str) -> str:
    return f"cli:{user_at_host}"
