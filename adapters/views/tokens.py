"""How a token reads in `--json` and in the API: everything but its secret's hashes."""

from __future__ import annotations

from typing import Any

from cronpilot.adapters.views.formats import iso
from cronpilot.domain.access.tokens import ApiToken


def token_view(token: ApiToken) -> dict[str, Any]:
    return {
        "id": token.id,
        "name": token.name,
        "scope": token.scope.value,
        "jobs": None if token.jobs is None else sorted(token.jobs),
        "expires_at": iso(token.expires_at),
        "created_at": iso(token.created_at),
        "created_by": token.created_by,
        "last_used_at": iso(token.last_used_at),
        "previous_secret_until": iso(token.previous_until),
        "revoked_at": iso(token.revoked_at),
        "revoked_by": token.revoked_by,
    }
