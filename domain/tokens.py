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
from dataclasses import dataclass
from datetime import datetime, timedelta

from cronpilot.domain.access import Scope

SECRET_PREFIX = "cp_"
SECRET_BYTES = 32
_SECRET_SHAPE = re.compile(r"cp_[A-Za-z0-9_-]{43}")
"""`token_urlsafe(32)` is 43 characters of the URL-safe base64 alphabet."""
NAME_SHAPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
NAME_RULE = "1 to 64 letters, digits, '.', '_' or '-', starting with a letter or a digit"
USE_RECORD_INTERVAL = timedelta(minutes=1)
"""How stale `last_used_at` may get: a token used all day is written once a minute, not once a
request (SQLite has one writer, and the API's reads should not queue behind it)."""


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
    """The actor who created it (`domain.access`)."""
    revoked_at: datetime | None = None
    revoked_by: str | None = None
    last_used_at: datetime | None = None
    """When a request last authenticated with it, to `USE_RECORD_INTERVAL`."""

    @property
    def live(self) -> bool:
        return self.revoked_at is None


def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(SECRET_BYTES)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def well_formed(secret: str) -> bool:
    """Whether `secret` could be one of ours: anything else is refused without a lookup."""
    return _SECRET_SHAPE.fullmatch(secret) is not None


def opens(token: ApiToken, secret: str) -> bool:
    """Whether `secret` is this live token's."""
    return token.live and hmac.compare_digest(token.secret_hash, hash_secret(secret))


def use_to_record(token: ApiToken, now: datetime) -> bool:
    """Whether a use at `now` is worth writing down (`USE_RECORD_INTERVAL`)."""
    return token.last_used_at is None or now - token.last_used_at >= USE_RECORD_INTERVAL
