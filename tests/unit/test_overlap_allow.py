"""`overlap: allow` in the domain: a claim of a slot whose run holds its own lease leaves the
endpoint free and planned past it, finishes of overlapping runs each re-plan the endpoint as
the one before left it, and the lease of a run alone ends its run only."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from cronpilot.domain.model import (
    Claim,
    Endpoint,
    Finish,
    Overlap,
    Response,
    Run,
    RunStatus,
    RunTrigger,
)
from cronpilot.domain.runs.claiming import run_lease_expired
from cronpilot.domain.runs.settling import settle_batch
from cronpilot.domain.runs.transitions import (
    claim_of,
    queued_claim,
    queued_run,
    runs_alone,
    started_run,
)
from cronpilot.domain.schedule.limits import calls_in_flight
from cronpilot.domain.schedule.overlap import claimed_alone, given_back, overrun

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
LEASE = T0 + timedelta(seconds=60)
OK = Response(status_code=200)
FAILED = Response(status_code=500)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.fixture
def allowing(make_endpoint: Callable[..., Endpoint]) -> Endpoint:
    """Every 5 s under `allow`, its first slot due at T0."""
    endpoint = make_endpoint(interval=5.0, floor=1.0, next_run_at=T0)
    return replace(endpoint, spec=replace(endpoint.spec, overlap=Overlap.ALLOW))


def _claim(endpoint: Endpoint, run_id: str) -> Claim:
    return claim_of(replace(endpoint, lease_owner="w1", lease_until=LEASE), run_id, run_id, LEASE)


def test_only_a_slot_of_the_schedule_under_allow_runs_alone_and_holds_the_lease(
    allowing: Endpoint,
) -> None:
    claim = _claim(allowing, "a")
    skipping = _claim(replace(allowing, spec=replace(allowing.spec, overlap=Overlap.SKIP)), "b")
    asked = queued_run(
        allowing, RunTrigger.MANUAL, slot_at=T0, due_at=T0, requested_by="ann", now=T0
    )

    assert (runs_alone(claim), runs_alone(skipping)) == (True, False)
    assert not runs_alone(queued_claim(allowing, asked, LEASE))
    assert started_run(claim, "w1", T0).lease_until == LEASE
    assert started_run(skipping, "w1", T0).lease_until is None


def test_the_claim_lets_the_endpoint_go_planned_past_its_slot(allowing: Endpoint) -> None:
    leased = replace(allowing, lease_owner="w1", lease_until=LEASE)

    freed = claimed_alone(leased, T0, T0)
    failing = claimed_alone(replace(leased, failure_count=3), T0, T0)

    assert (freed.lease_owner, freed.lease_until) == (None, None)
    assert (freed.next_slot, freed.last_slot_at) == (at(5), T0)
    assert failing.failure_count == 3  # the finish of the call counts it, not the claim


def test_finishes_of_overlapping_runs_add_up_and_keep_the_stored_lease(allowing: Endpoint) -> None:
    first, second = _claim(allowing, "a"), _claim(claimed_alone(allowing, T0, T0), "b")
    # A run asked for by hand holds the endpoint's lease meanwhile.
    stored = replace(claimed_alone(allowing, at(5), at(5)), lease_owner="w9", lease_until=LEASE)
    batch = [Finish(first, "w1", FAILED, at(9), 60.0), Finish(second, "w2", FAILED, at(14), 60.0)]

    one, two = settle_batch(batch, {allowing.id: stored}, {"a": T0, "b": at(5)})

    assert one is not None and two is not None
    assert (one.endpoint.failure_count, two.endpoint.failure_count) == (1, 2)
    assert (two.endpoint.lease_owner, two.endpoint.last_slot_at) == ("w9", at(5))
    assert one.skipped == two.skipped == ()


def test_a_run_alone_that_no_longer_runs_does_not_finish(allowing: Endpoint) -> None:
    claim = _claim(allowing, "a")

    assert settle_batch([Finish(claim, "w1", OK, at(9), 60.0)], {allowing.id: allowing}, {}) == [
        None
    ]


def test_a_call_under_allow_never_overruns(allowing: Endpoint) -> None:
    running = started_run(_claim(allowing, "a"), "w1", T0)

    settled = overrun(claimed_alone(allowing, T0, at(19)), running, at(19))

    assert settled.skipped == ()
    assert settled.endpoint.overrun_since is None


def test_a_slot_given_back_is_planned_again_unless_the_plan_is_earlier(
    allowing: Endpoint,
) -> None:
    claim = _claim(allowing, "a")
    moved = claimed_alone(allowing, T0, T0)

    again = given_back(moved, claim)

    assert (again.next_run_at, again.next_slot) == (T0, T0)
    assert given_back(again, claim) is again
    paused = replace(moved, next_run_at=None)
    assert given_back(paused, claim) is paused


@pytest.mark.parametrize(
    ("status", "lease_until", "expired"),
    [
        (RunStatus.RUNNING, at(-1), True),
        (RunStatus.RUNNING, at(1), False),
        (RunStatus.RUNNING, None, False),
        (RunStatus.SUCCESS, at(-1), False),
    ],
)
def test_the_reaper_ends_a_run_alone_whose_own_lease_expired(
    allowing: Endpoint, status: RunStatus, lease_until: datetime | None, expired: bool
) -> None:
    run = replace(started_run(_claim(allowing, "a"), "w1", T0), status=status)

    assert run_lease_expired(replace(run, lease_until=lease_until), T0) is expired


def test_each_run_alone_is_a_call_in_flight_of_its_key(allowing: Endpoint) -> None:
    keyed = replace(allowing, spec=replace(allowing.spec, limit="partner"))
    runs: list[Run] = [started_run(_claim(keyed, run_id), "w1", T0) for run_id in ("a", "b", "c")]
    runs[2] = replace(runs[2], status=RunStatus.SUCCESS)

    assert calls_in_flight({keyed.id: keyed}, runs) == {"partner": 2}
    assert calls_in_flight({keyed.id: replace(keyed, lease_owner="w9")}, runs) == {"partner": 3}
