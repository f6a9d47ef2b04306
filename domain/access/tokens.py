"""API tokens: what is stored of one (never its secret), and how a secret is made and checked.

A secret is `cp_` and 256 random bits (`secrets.token_urlsafe(32)`), shown once when the token
is created; the store keeps its SHA-256. A slow password hash (bcrypt, argon2) protects secrets
people choose, which are guessable; a random 256-bit secret cannot be guessed, so one fast hash
is as safe and lets a request be authenticated by one indexed lookup. The hash found is still
compared in constant time (`hmac.compare_digest`).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from cronpilot.domain.access.access import Scope
from cronpilot.domain.errors import InvalidTokenTerms, TokenExpired

SECRET_PREFIX = "cp_"
SECRET_BYTES = 32
_SECRET_SHAPE = re.compile(r"cp_[A-Za-z0-9_-]{43}")
"""`token_urlsafe(32)` is 43 characters of the URL-safe base64 alphabet."""
NAME_SHAPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
NAME_RULE = "1 to 64 letters, digits, '.', '_' or '-', starting with a letter or a digit"
USE_RECORD_INTERVAL = timedelta(minutes=1)
"""How stale `last_used_at` may get: a token used all day is written once a minute, not once a
request (SQLite has one writer, and the API's reads should not queue behind it)."""
DEFAULT_GRACE = timedelta(hours=1)
"""How long a rotated token's replaced secret still works unless told otherwise: time to
deploy the new one."""
MAX_GRACE = timedelta(days=30)
SESSION_SPAN = timedelta(hours=12)
"""How long a console session lasts: a working day, then the token is asked again."""


@dataclass(frozen=True, slots=True)
class ApiToken:
    id: str
    name: str
    """Unique among live tokens; a revoked token's name may be given to a new one."""
    scope: Scope
    secret_hash: str
    """SHA-256 of the secret, hex."""
    created_at: datetime
    created_by: str
    """The actor who created it (`domain.access.access`)."""
    revoked_at: datetime | None = None
    revoked_by: str | None = None
    last_used_at: datetime | None = None
    """When a request last authenticated with it, to `USE_RECORD_INTERVAL`."""
    expires_at: datetime | None = None
    """None: never expires."""
    jobs: frozenset[str] | None = None
    """The jobs it reaches; None: every job."""
    previous_hash: str | None = None
    """SHA-256 of the secret the last rotation replaced, which works until `previous_until`."""
    previous_until: datetime | None = None

    @property
    def live(self) -> bool:
        return self.revoked_at is None


@dataclass(frozen=True, slots=True)
class ConsoleSession:
    """A signed-in console browser: its cookie holds a random id, the store only its hash."""

    id_hash: str
    token_id: str
    created_at: datetime
    expires_at: datetime
    secret_hash: str
    """SHA-256 of the token's secret that opened it: the session lasts as long as that secret
    opens the token (`check_session_secret`), so rotating a token ends the sessions of its old
    secret when the grace ends."""


def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(SECRET_BYTES)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def well_formed(secret: str) -> bool:
    """Whether `secret` could be one of ours: anything else is refused without a lookup."""
    return _SECRET_SHAPE.fullmatch(secret) is not None


def stamp(at: datetime) -> str:
    """A moment as messages show it."""
    return at.strftime("%Y-%m-%d %H:%M:%S UTC")


def opens(token: ApiToken, secret: str, now: datetime) -> bool:
    """Whether `secret` opens this live token at `now`: its secret, or the one its last
    rotation replaced while that one's grace lasts. Raises `TokenExpired` for a token past its
    expiry, or a replaced secret past its grace: the caller can say why it is refused."""
    digest = hash_secret(secret)
    if not token.live:
        return False
    if not hmac.compare_digest(token.secret_hash, digest):
        previous = token.previous_hash
        if previous is None or not hmac.compare_digest(previous, digest):
            return False
        until = token.previous_until
        if until is None or now >= until:
            raise TokenExpired(token.name, stamp(until or now), rotated=True)
    if token.expires_at is not None and now >= token.expires_at:
        raise TokenExpired(token.name, stamp(token.expires_at))
    return True


def token_terms(
    name: str, now: datetime, expires_at: datetime | None, jobs: Iterable[str] | None
) -> frozenset[str] | None:
    """The job set a new token of that expiry and jobs gets. Raises `InvalidTokenTerms` for
    an expiry not in the future or an empty job list."""
    if expires_at is not None and expires_at <= now:
        raise InvalidTokenTerms(name, f"expiry {stamp(expires_at)} is not in the future")
    if jobs is None:
        return None
    chosen = frozenset(jobs)
    if not chosen:
        raise InvalidTokenTerms(name, "a job list needs at least one job")
    return chosen


def rotated(token: ApiToken, secret: str, now: datetime, grace: timedelta) -> ApiToken:
    """`token` opened by `secret` from now on, its current secret still working for `grace`
    (none: refused at once). Raises `InvalidTokenTerms` for a grace out of [0, `MAX_GRACE`]."""
    if grace < timedelta(0) or grace > MAX_GRACE:
        raise InvalidTokenTerms(token.name, f"a grace must be between 0 and {MAX_GRACE.days} days")
    return replace(
        token,
        secret_hash=hash_secret(secret),
        previous_hash=token.secret_hash,
        previous_until=now + grace,
    )


def session_open(session: ConsoleSession, now: datetime) -> bool:
    return now < session.expires_at


def check_session_secret(session: ConsoleSession, token: ApiToken, now: datetime) -> None:
    """Raise `TokenExpired` when the secret that opened `session` no longer opens `token`: a
    rotation replaced it and its grace is over (or a second rotation retired it)."""
    if hmac.compare_digest(session.secret_hash, token.secret_hash):
        return
    until = token.previous_until
    previous = token.previous_hash
    in_grace = until is not None and now < until
    if in_grace and previous is not None and hmac.compare_digest(session.secret_hash, previous):
        return
    raise TokenExpired(token.name, stamp(until or now), rotated=True)


def use_to_record(token: ApiToken, now: datetime) -> bool:
    """Whether a use at `now` is worth writing down (`USE_RECORD_INTERVAL`)."""
    return token.last_used_at is None or now - token.last_used_at >= USE_RECORD_INTERVAL
