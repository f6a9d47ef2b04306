"""API tokens and the audit log on every store (memory, SQLite, PostgreSQL): the
`AccessRepository` contract, and who paused an endpoint."""

from __future__ import annotations

import pytest

from cronpilot.domain.access.access import Scope
from cronpilot.domain.access.audit import AuditEntry
from cronpilot.domain.access.tokens import ApiToken, hash_secret
from cronpilot.domain.errors import ConflictError, TokenNotFound
from cronpilot.domain.model import Pause
from cronpilot.domain.ports import Store
from tests.contract.builders import T0, add_endpoint, seconds
from tests.support.scheduling import set_pause

ANN = "cli:ann@web-1"


def token(name: str, secret: str = "", scope: Scope = Scope.READ, id_: str = "") -> ApiToken:
    return ApiToken(
        id=id_ or f"id-{name}-{secret}",
        name=name,
        scope=scope,
        secret_hash=hash_secret(secret or f"secret-of-{name}"),
        created_at=T0,
        created_by=ANN,
    )


def entry(n: int, actor: str = ANN, action: str = "pause", at: int | None = None) -> AuditEntry:
    moment = T0 + seconds(n if at is None else at)
    return AuditEntry(f"e{n:03d}", moment, actor, action, f"j/{n}", f"change {n}")


async def test_a_token_is_found_by_name_by_id_and_by_its_secrets_hash(store: Store) -> None:
    ci = token("ci", "s1", Scope.WRITE)
    await store.access.add_token(ci)
    await store.access.add_token(token("grafana", "s2"))

    assert await store.access.get_live_token("ci") == ci
    assert await store.access.get_live_token(ci.id) == ci
    assert await store.access.find_token(hash_secret("s1")) == ci
    assert await store.access.find_token(hash_secret("nobody's")) is None
    assert [t.name for t in await store.access.list_tokens()] == ["ci", "grafana"]
    with pytest.raises(TokenNotFound):
        await store.access.get_live_token("jenkins")


async def test_one_live_token_per_name_and_a_revoked_name_may_be_reused(store: Store) -> None:
    first = token("ci", "s1")
    await store.access.add_token(first)
    with pytest.raises(ConflictError):
        await store.access.add_token(token("ci", "s2"))

    revoked = await store.access.revoke_token(first.id, ANN, T0 + seconds(5))
    second = token("ci", "s3", Scope.ADMIN)
    await store.access.add_token(second)

    assert (revoked.revoked_at, revoked.revoked_by, revoked.live) == (T0 + seconds(5), ANN, False)
    assert await store.access.get_live_token("ci") == second
    assert await store.access.list_tokens() == [second]
    assert await store.access.list_tokens(include_revoked=True) == [revoked, second]
    # A revoked token is still found by its secret: the caller refuses it, and can say why.
    assert await store.access.find_token(first.secret_hash) == revoked


async def test_a_revoked_token_cannot_be_revoked_again_nor_found_live(store: Store) -> None:
    ci = token("ci", "s1")
    await store.access.add_token(ci)
    await store.access.revoke_token(ci.id, ANN, T0)

    with pytest.raises(TokenNotFound):
        await store.access.revoke_token(ci.id, "cli:bob@web-2", T0 + seconds(1))
    with pytest.raises(TokenNotFound):
        await store.access.get_live_token(ci.id)
    with pytest.raises(TokenNotFound):
        await store.access.revoke_token("never-was", ANN, T0)
    assert (await store.access.list_tokens(include_revoked=True))[0].revoked_by == ANN


async def test_mark_used_keeps_the_last_use(store: Store) -> None:
    ci = token("ci", "s1")
    await store.access.add_token(ci)

    await store.access.mark_used(ci.id, T0 + seconds(90))
    await store.access.mark_used("unknown", T0 + seconds(91))

    assert (await store.access.get_live_token("ci")).last_used_at == T0 + seconds(90)


async def test_the_audit_log_reads_newest_first_filtered_and_page_by_page(store: Store) -> None:
    entries = [
        entry(1),
        entry(2, actor="token:ci", action="run_now"),
        # Two at one moment: the id breaks the tie, in pages as in one list.
        entry(3, at=3),
        entry(4, at=3, action="resume"),
        entry(5, actor="token:ci"),
    ]
    for written in (entries[3], entries[0], entries[4], entries[2], entries[1]):
        await store.access.record(written)

    newest_first = list(reversed(entries))
    assert await store.access.list_audit() == newest_first
    assert await store.access.list_audit(actor="token:ci") == [entries[4], entries[1]]
    assert await store.access.list_audit(action="pause") == [entries[4], entries[2], entries[0]]
    assert await store.access.list_audit(actor="token:ci", action="run_now") == [entries[1]]
    pages, before = [], None
    while page := await store.access.list_audit(limit=2, before=before):
        pages.append(page)
        before = page[-1].cursor
    assert pages == [newest_first[0:2], newest_first[2:4], newest_first[4:]]
    assert await store.access.list_audit(before=entries[3].cursor, action="pause") == [
        entries[2],
        entries[0],
    ]


async def test_tokens_and_entries_written_in_a_unit_go_with_its_rollback(store: Store) -> None:
    with pytest.raises(RuntimeError):
        async with store.unit_of_work() as tx:
            await tx.access.add_token(token("ci", "s1"))
            await tx.access.record(entry(1))
            raise RuntimeError("crash before commit")

    assert await store.access.list_tokens(include_revoked=True) == []
    assert await store.access.list_audit() == []


async def test_a_pause_keeps_who_paused(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "a", T0)

    paused = await set_pause(store.catalog, endpoint_id, Pause("maintenance", None, ANN), T0)

    assert paused.pause == Pause("maintenance", None, ANN)
    assert (await store.catalog.get_endpoint("j/a")).pause == Pause("maintenance", None, ANN)
