"""API tokens through the use cases, on the in-memory store (the SQL stores share the
contract): a secret shown once and stored hashed, authentication, revocation, the audit."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from cronpilot.domain.access.access import Principal, Scope
from cronpilot.domain.errors import InvalidTokenName, StoreUnavailable, TokenNotFound
from cronpilot.usecases.access import (
    authenticate,
    create_token,
    list_audit,
    list_tokens,
    revoke_token,
)
from tests.support.memory_store import MemoryStore

T0 = datetime(2030, 1, 1, tzinfo=UTC)
ANN = "cli:ann@web-1"


async def test_the_secret_opens_its_token_with_its_scope_and_is_not_stored() -> None:
    store = MemoryStore()

    token, secret = await create_token(store.unit_of_work, "ci", Scope.WRITE, ANN, T0)

    assert secret.startswith("cp_")
    assert len(secret) == len("cp_") + 43
    assert token.secret_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert secret not in repr(store.state)
    principal = await authenticate(store, secret, T0)
    assert principal == Principal("token:ci", Scope.WRITE)
    assert principal.may(Scope.READ)
    assert principal.may(Scope.WRITE)
    assert not principal.may(Scope.ADMIN)
    assert await list_tokens(store.reading) == [replace(token, last_used_at=T0)]


async def test_two_tokens_two_secrets_each_opens_only_its_own() -> None:
    store = MemoryStore()
    _, reader = await create_token(store.unit_of_work, "grafana", Scope.READ, ANN, T0)
    _, admin = await create_token(store.unit_of_work, "ops", Scope.ADMIN, ANN, T0)

    assert reader != admin
    assert await authenticate(store, reader, T0) == Principal("token:grafana", Scope.READ)
    assert await authenticate(store, admin, T0) == Principal("token:ops", Scope.ADMIN)


@pytest.mark.parametrize(
    "presented",
    [
        "",
        "cp_",
        "Bearer cp_abc",
        "cp_" + "A" * 42,
        "cp_" + "A" * 44,
        "cp_" + "A" * 42 + "!",
        # Well formed, and nobody's.
        "cp_" + "A" * 43,
    ],
)
async def test_a_wrong_or_malformed_secret_opens_nothing(presented: str) -> None:
    store = MemoryStore()
    _, secret = await create_token(store.unit_of_work, "ci", Scope.ADMIN, ANN, T0)

    assert await authenticate(store, presented, T0) is None
    assert await authenticate(store, secret + "x", T0) is None
    assert await authenticate(store, secret.upper(), T0) is None


async def test_a_revoked_token_opens_nothing_and_its_name_is_free_again() -> None:
    store = MemoryStore()
    old, secret = await create_token(store.unit_of_work, "ci", Scope.WRITE, ANN, T0)

    revoked = await revoke_token(store.unit_of_work, "ci", "cli:bob@web-2", T0 + timedelta(1))
    new, fresh = await create_token(store.unit_of_work, "ci", Scope.READ, ANN, T0 + timedelta(2))

    assert (revoked.id, revoked.revoked_by) == (old.id, "cli:bob@web-2")
    assert await authenticate(store, secret, T0 + timedelta(3)) is None
    assert await authenticate(store, fresh, T0 + timedelta(3)) == Principal("token:ci", Scope.READ)
    assert [t.id for t in await list_tokens(store.reading)] == [new.id]
    assert len(await list_tokens(store.reading, include_revoked=True)) == 2
    with pytest.raises(TokenNotFound):
        await revoke_token(store.unit_of_work, old.id, ANN, T0 + timedelta(4))


async def test_a_live_tokens_name_and_a_malformed_name_are_refused() -> None:
    store = MemoryStore()
    await create_token(store.unit_of_work, "ci", Scope.READ, ANN, T0)

    with pytest.raises(InvalidTokenName, match="taken by a live token"):
        await create_token(store.unit_of_work, "ci", Scope.ADMIN, ANN, T0)
    for bad in ("", "-ci", "ci bot", "x" * 65, "ci/bot"):
        with pytest.raises(InvalidTokenName, match="is not 1 to 64 letters"):
            await create_token(store.unit_of_work, bad, Scope.READ, ANN, T0)
    assert [t.name for t in await list_tokens(store.reading)] == ["ci"]
    assert len(await list_audit(store.reading)) == 1


async def test_a_tokens_use_is_recorded_at_most_once_a_minute() -> None:
    store = MemoryStore()
    _, secret = await create_token(store.unit_of_work, "ci", Scope.READ, ANN, T0)

    async def used_at(now: datetime) -> datetime | None:
        assert await authenticate(store, secret, now) is not None
        return (await list_tokens(store.reading))[0].last_used_at

    assert await used_at(T0 + timedelta(seconds=10)) == T0 + timedelta(seconds=10)
    assert await used_at(T0 + timedelta(seconds=69)) == T0 + timedelta(seconds=10)
    assert await used_at(T0 + timedelta(seconds=70)) == T0 + timedelta(seconds=70)


async def test_a_busy_database_does_not_fail_a_valid_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = MemoryStore()
    _, secret = await create_token(store.unit_of_work, "ci", Scope.READ, ANN, T0)

    async def busy(token_id: str, now: datetime) -> None:
        raise StoreUnavailable("database is locked")

    monkeypatch.setattr(store.access, "mark_used", busy)

    assert await authenticate(store, secret, T0) == Principal("token:ci", Scope.READ)


async def test_creating_and_revoking_are_audited_without_the_secret() -> None:
    store = MemoryStore()
    _, secret = await create_token(store.unit_of_work, "ci", Scope.WRITE, ANN, T0)
    await revoke_token(store.unit_of_work, "ci", "cli:bob@web-2", T0 + timedelta(seconds=1))

    entries = await list_audit(store.reading)

    assert [(e.actor, e.action, e.target, e.detail) for e in entries] == [
        ("cli:bob@web-2", "token_revoke", "ci", "scope write"),
        (ANN, "token_create", "ci", "scope write"),
    ]
    assert await list_audit(store.reading, actor=ANN) == entries[1:]
    assert await list_audit(store.reading, before=entries[0].cursor) == entries[1:]
    assert secret not in repr(entries)
