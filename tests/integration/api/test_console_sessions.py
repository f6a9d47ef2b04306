"""The console's server-side sessions: the cookie holds a random id (the store only its hash),
never the token; signing out ends the session for every copy of the cookie; sessions expire;
an expired token is told so at sign-in; a job-limited token sees its jobs only."""

from __future__ import annotations

from datetime import timedelta

from cronpilot.domain.access.access import Scope
from cronpilot.domain.access.tokens import SESSION_SPAN, hash_secret
from cronpilot.usecases.access import create_token, rotate_token
from tests.integration.api.test_console import CSRF, Console, console

__all__ = ["console"]


async def test_the_cookie_holds_a_session_id_stored_hashed_never_the_token(
    console: Console,
) -> None:
    secret = console.secrets[Scope.READ]
    async with console.client() as client:
        signed = await client.post("/console/login", data={"token": secret})
        cookie = client.cookies["cronpilot_console"]

    assert signed.status_code == 303
    assert secret not in signed.headers["set-cookie"]
    assert cookie.startswith("cs_") and cookie != secret
    [session] = console.store.state.console_sessions.values()
    assert session.id_hash == hash_secret(cookie)
    assert session.expires_at == console.clock.now() + SESSION_SPAN
    assert f"max-age={int(SESSION_SPAN.total_seconds())}" in signed.headers["set-cookie"].lower()


async def test_signing_out_ends_the_session_for_a_copied_cookie_too(console: Console) -> None:
    async with console.signed_in(Scope.READ) as (client, csrf):
        cookie = client.cookies["cronpilot_console"]
        async with console.client() as thief:
            thief.cookies.set("cronpilot_console", cookie, path="/console")
            assert (await thief.get("/console/endpoints")).status_code == 200
            await client.post("/console/logout", data={"csrf": csrf})
            after = await thief.get("/console/endpoints")

    assert after.status_code == 303 and after.headers["location"].startswith("/console/login")
    assert console.store.state.console_sessions == {}


async def test_signing_out_needs_the_session_s_csrf_token(console: Console) -> None:
    async with console.signed_in(Scope.READ) as (client, _):
        refused = await client.post("/console/logout", data={"csrf": "0" * 64})
        still = await client.get("/console/endpoints")

    assert refused.status_code == 403
    assert still.status_code == 200


async def test_a_session_expires_after_its_span(console: Console) -> None:
    async with console.signed_in(Scope.READ) as (client, _):
        console.clock.advance(SESSION_SPAN.total_seconds() - 1)
        assert (await client.get("/console/endpoints")).status_code == 200
        console.clock.advance(1)
        assert (await client.get("/console/endpoints")).status_code == 303


async def test_an_expired_token_is_told_so_at_sign_in_and_ends_its_sessions(
    console: Console,
) -> None:
    expiry = console.clock.now() + timedelta(hours=1)
    _, secret = await create_token(
        console.store.unit_of_work,
        "temp",
        Scope.READ,
        "cli:t@h",
        console.clock.now(),
        expires_at=expiry,
    )
    async with console.client() as client:
        await client.post("/console/login", data={"token": secret})
        assert (await client.get("/console/endpoints")).status_code == 200
        console.clock.advance(3600)
        ended = await client.get("/console/endpoints")
        refused = await client.post("/console/login", data={"token": secret})

    assert ended.status_code == 303
    assert refused.status_code == 401
    assert f"token &#39;temp&#39; expired at {expiry:%Y-%m-%d %H:%M:%S} UTC" in refused.text


async def test_a_job_limited_token_lands_on_its_job_and_sees_no_other(console: Console) -> None:
    _, secret = await create_token(
        console.store.unit_of_work,
        "shop-bot",
        Scope.WRITE,
        "cli:t@h",
        console.clock.now(),
        jobs=["shop"],
    )
    async with console.client() as client:
        signed = await client.post("/console/login", data={"token": secret})
        landing = await client.get(signed.headers["location"])
        own = await client.get("/console/endpoints/shop/stock")
        everything = await client.get("/console/runs")
        other = await client.get("/console/endpoints/other/thing")
        found = CSRF.search(own.text)
        assert found is not None
        out = await client.post("/console/logout", data={"csrf": found.group(1)})

    assert signed.headers["location"] == "/console/endpoints?job=shop"
    assert landing.status_code == 200 and own.status_code == 200
    assert everything.status_code == 200
    assert other.status_code == 404
    assert "no endpoint &#39;other/thing&#39;" in other.text
    assert out.status_code == 303 and out.headers["location"] == "/console/login"


async def test_a_sign_in_posted_from_another_site_is_refused(console: Console) -> None:
    secret = console.secrets[Scope.READ]
    async with console.client() as client:
        host = client.base_url.netloc.decode()
        forged = await client.post(
            "/console/login", data={"token": secret}, headers={"Origin": "https://evil.example"}
        )
        opaque = await client.post(
            "/console/login", data={"token": secret}, headers={"Origin": "null"}
        )
        fetched = await client.post(
            "/console/login", data={"token": secret}, headers={"Sec-Fetch-Site": "cross-site"}
        )
        assert console.store.state.console_sessions == {}
        same = await client.post(
            "/console/login", data={"token": secret}, headers={"Origin": f"http://{host}"}
        )

    assert [r.status_code for r in (forged, opaque, fetched)] == [403, 403, 403]
    assert "posted from another site" in forged.text
    assert "cronpilot_console" not in forged.headers.get("set-cookie", "")
    assert same.status_code == 303


async def test_rotation_ends_the_sessions_of_the_old_secret_when_its_grace_ends(
    console: Console,
) -> None:
    token, secret = await create_token(
        console.store.unit_of_work, "ci", Scope.READ, "cli:t@h", console.clock.now()
    )
    async with console.client() as old, console.client() as new:
        await old.post("/console/login", data={"token": secret})
        _, fresh = await rotate_token(
            console.store.unit_of_work,
            "ci",
            "cli:t@h",
            console.clock.now(),
            grace=timedelta(minutes=10),
        )
        await new.post("/console/login", data={"token": fresh})
        console.clock.advance(599)
        within = await old.get("/console/endpoints")
        console.clock.advance(1)
        after = await old.get("/console/endpoints")
        kept = await new.get("/console/endpoints")

    assert within.status_code == 200
    assert after.status_code == 303 and after.headers["location"].startswith("/console/login")
    assert kept.status_code == 200
    assert [s.token_id for s in console.store.state.console_sessions.values()] == [token.id]
