"""Token hygiene on every store (memory, SQLite, PostgreSQL), through the use cases and the fake
clock: expiry, rotation with a grace, job-limited tokens, and console
sessions that signing out ends."""

from __future__ import annotations

from datetime import timedelta

import pytest

from cronpilot.domain.access.access import Principal, Scope
from cronpilot.domain.access.tokens import SESSION_SPAN, hash_secret
from cronpilot.domain.errors import (
    InvalidTokenTerms,
    TokenExpired,
    TokenNotFound,
)
from cronpilot.domain.ports import Store
from cronpilot.usecases.access import (
    authenticate,
    create_token,
    list_audit,
    revoke_token,
    rotate_token,
    session_principal,
    sign_in,
    sign_out,
)
from cronpilot.usecases.declarations import apply_to_catalog
from tests.contract.builders import declaration, spec
from tests.support.clock import FakeClock

ANN = "cli:ann@web-1"
DAY = 86400


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def two_jobs(store: Store, clock: FakeClock) -> Store:
    """Jobs `etl` (endpoint `load`) and `billing` (endpoint `invoice`)."""
    jobs = [declaration("etl", spec("load")), declaration("billing", spec("invoice"))]
    await apply_to_catalog(store.catalog, jobs, clock.now())
    return store


async def test_a_token_works_until_its_expiry_then_says_when_it_expired(
    store: Store, clock: FakeClock
) -> None:
    expiry = clock.now() + timedelta(days=90)
    _, secret = await create_token(
        store.unit_of_work, "ci", Scope.WRITE, ANN, clock.now(), expires_at=expiry
    )

    assert (await store.access.get_live_token("ci")).expires_at == expiry
    assert await authenticate(store, secret, clock.now()) == Principal("token:ci", Scope.WRITE)
    clock.advance(90 * DAY - 1)
    assert await authenticate(store, secret, clock.now()) is not None
    clock.advance(1)
    with pytest.raises(TokenExpired) as expired:
        await authenticate(store, secret, clock.now())
    assert str(expired.value) == f"token 'ci' expired at {expiry:%Y-%m-%d %H:%M:%S} UTC"


@pytest.mark.parametrize("ahead", [0, -1, -DAY])
async def test_an_expiry_not_in_the_future_is_refused_and_nothing_is_written(
    store: Store, clock: FakeClock, ahead: int
) -> None:
    with pytest.raises(InvalidTokenTerms, match="is not in the future"):
        await create_token(
            store.unit_of_work,
            "ci",
            Scope.READ,
            ANN,
            clock.now(),
            expires_at=clock.now() + timedelta(seconds=ahead),
        )
    assert await store.access.list_tokens(include_revoked=True) == []
    assert await list_audit(store.reading) == []


async def test_a_rotated_secret_works_for_its_grace_then_is_refused(
    store: Store, clock: FakeClock
) -> None:
    _, old = await create_token(store.unit_of_work, "ci", Scope.READ, ANN, clock.now())
    clock.advance(60)

    rotated, new = await rotate_token(
        store.unit_of_work, "ci", ANN, clock.now(), timedelta(hours=1)
    )

    assert new != old
    assert rotated.secret_hash == hash_secret(new)
    assert rotated.previous_hash == hash_secret(old)
    assert rotated.previous_until == clock.now() + timedelta(hours=1)
    assert await store.access.get_live_token("ci") == rotated
    ci = Principal("token:ci", Scope.READ)
    clock.advance(3599)
    assert await authenticate(store, old, clock.now()) == ci
    assert await authenticate(store, new, clock.now()) == ci
    clock.advance(1)
    with pytest.raises(TokenExpired, match="secret of token 'ci' stopped working at"):
        await authenticate(store, old, clock.now())
    assert await authenticate(store, new, clock.now()) == ci
    [entry, _] = await list_audit(store.reading)
    assert (entry.action, entry.actor, entry.target) == ("token_rotate", ANN, "ci")


async def test_a_rotation_without_grace_refuses_the_old_secret_at_once_and_again_drops_it(
    store: Store, clock: FakeClock
) -> None:
    _, first = await create_token(store.unit_of_work, "ci", Scope.READ, ANN, clock.now())
    _, second = await rotate_token(store.unit_of_work, "ci", ANN, clock.now(), timedelta(0))
    with pytest.raises(TokenExpired):
        await authenticate(store, first, clock.now())

    _, third = await rotate_token(store.unit_of_work, "ci", ANN, clock.now(), timedelta(hours=1))

    # Only the secret just replaced keeps a grace: the one before it opens nothing.
    assert await authenticate(store, first, clock.now()) is None
    assert await authenticate(store, second, clock.now()) is not None
    assert await authenticate(store, third, clock.now()) is not None


async def test_rotating_an_unknown_or_revoked_token_or_with_a_bad_grace_is_refused(
    store: Store, clock: FakeClock
) -> None:
    await create_token(store.unit_of_work, "ci", Scope.READ, ANN, clock.now())
    with pytest.raises(InvalidTokenTerms, match="a grace must be between"):
        await rotate_token(store.unit_of_work, "ci", ANN, clock.now(), timedelta(days=31))
    with pytest.raises(InvalidTokenTerms):
        await rotate_token(store.unit_of_work, "ci", ANN, clock.now(), timedelta(seconds=-1))
    with pytest.raises(TokenNotFound):
        await rotate_token(store.unit_of_work, "nobody", ANN, clock.now())
    await revoke_token(store.unit_of_work, "ci", ANN, clock.now())
    with pytest.raises(TokenNotFound):
        await rotate_token(store.unit_of_work, "ci", ANN, clock.now())


async def test_a_revoked_token_refuses_its_secret_within_a_grace_too(
    store: Store, clock: FakeClock
) -> None:
    _, old = await create_token(store.unit_of_work, "ci", Scope.READ, ANN, clock.now())
    _, new = await rotate_token(store.unit_of_work, "ci", ANN, clock.now(), timedelta(hours=1))
    await revoke_token(store.unit_of_work, "ci", ANN, clock.now())

    assert await authenticate(store, old, clock.now()) is None
    assert await authenticate(store, new, clock.now()) is None


async def test_a_token_limited_to_jobs_keeps_them_and_an_unknown_job_is_refused(
    two_jobs: Store, clock: FakeClock
) -> None:
    store = two_jobs
    _, secret = await create_token(
        store.unit_of_work, "etl-bot", Scope.WRITE, ANN, clock.now(), jobs=["etl"]
    )
    with pytest.raises(InvalidTokenTerms, match="cannot be limited to no job 'nope'"):
        await create_token(
            store.unit_of_work, "x", Scope.READ, ANN, clock.now(), jobs=["etl", "nope"]
        )
    with pytest.raises(InvalidTokenTerms, match="at least one job"):
        await create_token(store.unit_of_work, "y", Scope.READ, ANN, clock.now(), jobs=[])

    assert [t.name for t in await store.access.list_tokens()] == ["etl-bot"]
    assert await authenticate(store, secret, clock.now()) == Principal(
        "token:etl-bot", Scope.WRITE, frozenset({"etl"})
    )


async def test_a_console_session_lasts_its_span_and_signing_out_ends_it(
    store: Store, clock: FakeClock
) -> None:
    _, secret = await create_token(store.unit_of_work, "ann", Scope.WRITE, ANN, clock.now())
    opened = await sign_in(store, secret, clock.now())
    assert opened is not None
    session_id, principal = opened
    second = await sign_in(store, secret, clock.now())
    assert second is not None

    assert session_id.startswith("cs_") and secret not in session_id
    assert await store.access.find_session(session_id) is None  # only its hash is stored
    assert await session_principal(store, session_id, clock.now()) == principal

    await sign_out(store, session_id)
    assert await session_principal(store, session_id, clock.now()) is None
    # Another browser's session of the same token is its own.
    assert await session_principal(store, second[0], clock.now()) == principal
    clock.advance(SESSION_SPAN.total_seconds())
    assert await session_principal(store, second[0], clock.now()) is None
    assert await store.access.find_session(hash_secret(second[0])) is None


async def test_a_session_ends_with_its_token_revoked_or_expired(
    store: Store, clock: FakeClock
) -> None:
    _, ann = await create_token(store.unit_of_work, "ann", Scope.READ, ANN, clock.now())
    expiry = clock.now() + timedelta(hours=1)
    _, bob = await create_token(
        store.unit_of_work, "bob", Scope.READ, ANN, clock.now(), expires_at=expiry
    )
    anns, bobs = await sign_in(store, ann, clock.now()), await sign_in(store, bob, clock.now())
    assert anns is not None and bobs is not None

    await revoke_token(store.unit_of_work, "ann", ANN, clock.now())
    clock.advance(3600)

    assert await session_principal(store, anns[0], clock.now()) is None
    assert await store.access.find_session(hash_secret(anns[0])) is None
    with pytest.raises(TokenExpired, match="token 'bob' expired"):
        await session_principal(store, bobs[0], clock.now())
    assert await sign_in(store, "cp_" + "x" * 43, clock.now()) is None
