"""Issue 21's "Done when", on a fake clock: the example jobs plus a failing, an always-changing
and a never-changing endpoint and a rules endpoint following a queue whose depth swings every
40 s (`bench.left_alone.EXTRA_JOBS`), one scheduler with the planner (built-in and rules, as
`cronpilot scheduler --with-planner` runs them, `bench.player`), for ten simulated minutes,
while an admin looking every few seconds rejects every pending proposal through the proposal
desk, as `cronpilot proposals reject` does. `python -m bench.left_alone` is the same trial in
real time, with the CLI."""

from __future__ import annotations

import logging
from collections import Counter

import pytest

from bench.left_alone import (
    REJECTION,
    RULE_DWELL,
    SESSION_SPACING,
    SWINGING,
    PendingWatch,
    figures,
    left_alone_jobs,
    most_within,
)
from bench.player import START, Moment, play, reject_pending
from cronpilot.adapters.sql import SqlStore
from cronpilot.domain.planning.planning import ProposalStatus
from cronpilot.usecases.queries import catalog, planner
from tests.support.settings import settings_for_tests

LOOPBACK = ["127.0.0.1/32"]
TEN_MINUTES = 600
STEP = 2
"""Seconds the clock moves at a time: the shortest interval declared, so no slot is missed."""
ADMIN_EVERY = 5
"""Seconds between the admin's looks: a person at the CLI, not a script racing the planner."""


@pytest.mark.slow
@pytest.mark.timeout(600)
async def test_ten_minutes_left_alone_with_an_admin_who_rejects_everything(
    sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    settings = settings_for_tests(
        database_url=sqlite_url, allowed_networks=LOOPBACK, worker_id="left-alone"
    )
    watch = PendingWatch()
    rejected: Counter[str] = Counter()
    refs: dict[str, str] = {}

    async def admin(moment: Moment) -> None:
        if not refs:
            refs.update(await catalog.endpoint_refs(moment.store.reading))
        pending = await planner.list_proposals(
            moment.store.reading, status=ProposalStatus.PENDING, limit=1000
        )
        watch.look([refs[p.endpoint_id] for p in pending.items], f"{moment.elapsed:.0f} s")
        if moment.elapsed % ADMIN_EVERY < STEP:
            for decided in await reject_pending(moment, REJECTION):
                rejected[refs[decided.endpoint_id]] += 1

    store = await _open(sqlite_url)
    try:
        await play(
            settings, store, left_alone_jobs(), seconds=TEN_MINUTES, step=STEP, after_step=admin
        )
        proposals = await store.planner.list_proposals(limit=100_000)
        sessions = await store.planner.list_sessions(limit=100_000)
    finally:
        await store.close()

    found = figures(proposals, sessions, refs, watch, START)
    said = "\n".join(
        [
            f"rejections per endpoint: {dict(rejected)}",
            *found.lines(START),
        ]
    )
    print(said)
    assert rejected, "the planner proposed nothing for the admin to reject\n" + said
    assert not found.repeated, said
    assert found.most_pending[0] <= 1, said
    swinging = found.rules.get(SWINGING, [])
    assert most_within(swinging, RULE_DWELL) <= 1, said
    assert max(found.sessions.values(), default=0) <= 1, (
        f"more than one stored session that proposed nothing within {SESSION_SPACING}\n" + said
    )
    minutes = TEN_MINUTES // 60
    assert max(found.per_endpoint.values(), default=0) <= minutes, (
        "more stored sessions of an endpoint than minutes\n" + said
    )
    troubles = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert troubles == [], said


async def _open(url: str) -> SqlStore:
    from bench.support import open_store

    return await open_store(url)
