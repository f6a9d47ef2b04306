"""The freshness analyst (issue 31, decision 0048): a job's calls move from an endpoint that
never changes to one that changes on most calls, in numbers."""

from __future__ import annotations

from cronpilot.domain.planning.planning import ProposalStatus
from cronpilot.domain.ports import Store
from cronpilot.planner.freshness import FreshnessAnalyst
from tests.integration.planner.builders import answer, declare, make_planner, spec
from tests.support.clock import FakeClock
from tests.support.settings import limits_for_tests

CLAMPS = {"min_interval_seconds": 5, "max_interval_seconds": 3600}


async def test_calls_move_to_where_they_keep_copies_fresh(store: Store, clock: FakeClock) -> None:
    await declare(
        store, clock.now(), spec("silent", every=20, **CLAMPS), spec("busy", every=20, **CLAMPS)
    )
    for n in range(12):
        await answer(store, "j/silent", {"n": 0})
        await answer(store, "j/busy", {"n": n // 2})
    clock.advance(240)
    analyst = FreshnessAnalyst()
    planner = make_planner(store, analyst, clock, limits=limits_for_tests(max_changes_per_hour=100))
    # An endpoint analysed before its sibling knows nothing yet of the sibling's estimate:
    # it keeps its share of the calls.
    for ref in ("j/busy", "j/silent", "j/busy"):
        await planner.analyse_now(ref)

    proposals = {p.endpoint_id: p for p in reversed(await store.planner.list_proposals())}
    refs = {e.id: e.name for e in await store.catalog.list_endpoints("j")}
    by_name = {refs[k]: v for k, v in proposals.items()}
    silent, busy = by_name["silent"], by_name["busy"]
    assert silent.status is busy.status is ProposalStatus.APPLIED
    assert silent.interval_seconds is not None and busy.interval_seconds is not None
    assert silent.interval_seconds > 20 > busy.interval_seconds
    assert silent.reason.startswith("no change seen (0 changes seen in 11 calls); every 20 s")
    assert "keeps the copy fresh" in busy.reason and "would keep it fresh" in busy.reason


async def test_answers_whose_every_field_is_volatile_keep_the_schedule(
    store: Store, clock: FakeClock
) -> None:
    # A source changing on almost every call that says so only by a rising version number:
    # learnt as a counter (volatile), its answers compare equal whatever it does. Taking
    # that for "no change seen" relaxed a source changing every 3 s to every 46 s
    # (`bench.freshness_live`).
    await declare(
        store, clock.now(), spec("feed", every=20, **CLAMPS), spec("quiet", every=20, **CLAMPS)
    )
    for n in range(12):
        await answer(store, "j/feed", {"version": n, "seconds_since_change": 1.5})
        await answer(store, "j/quiet", {"n": 0})
    feed = await store.catalog.get_endpoint("j/feed")
    await store.catalog.set_volatile_fields(feed.id, ["seconds_since_change", "version"])
    clock.advance(240)
    planner = make_planner(store, FreshnessAnalyst(), clock)

    [session] = await planner.analyse_now("j/feed")

    assert session.reasoning.startswith("cannot estimate: its answers cannot be compared")
    assert await store.planner.list_proposals(endpoint_id=feed.id) == []
