"""Missed and late runs and gaps in the heartbeats, pure (`domain.runs.watch`): when a slot counts
as missed, how a streak of late runs begins and ends through the very transition every store
applies, and the alerts each episode raises."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cronpilot.domain.alerts.alerts import AlertEvent, run_notifications
from cronpilot.domain.model import (
    Endpoint,
    EndpointSpec,
    Pause,
    Response,
    Run,
    RunStatus,
    RunTrigger,
    Schedule,
    ScheduleSource,
)
from cronpilot.domain.runs.transitions import after_finish
from cronpilot.domain.runs.watch import (
    WORKERS,
    WatchEpisode,
    gap_episode,
    gap_notifications,
    late_since,
    missed_episode,
    missed_is_over,
    missed_slot,
    opened_notifications,
    recovered_notifications,
    workers_gap,
)

SLOT = datetime(2030, 3, 1, 12, 0, tzinfo=UTC)
HOOK = "https://hooks.example.com/ops"
E = AlertEvent


def t(seconds: float) -> datetime:
    return SLOT + timedelta(seconds=seconds)


def _endpoint(name: str = "probe", **spec: Any) -> Endpoint:
    base = EndpointSpec(
        name, f"https://api.example.com/{name}", Schedule(interval_seconds=60), notify=(HOOK,)
    )
    return Endpoint(f"ep-{name}", "job-1", "shop", replace(base, **spec), next_run_at=SLOT)


def _run(
    started: datetime, slot: datetime = SLOT, trigger: RunTrigger = RunTrigger.SCHEDULE
) -> Run:
    return Run(
        id=f"run-{started:%H%M%S}",
        endpoint_id="ep-probe",
        job_id="job-1",
        trace_id="trace",
        trigger=trigger,
        schedule_source=ScheduleSource.BASELINE,
        status=RunStatus.RUNNING,
        slot_at=slot,
        started_at=started,
        worker_id="w1",
    )


# --- missed -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("now", "missed"),
    [(t(599), None), (t(600), SLOT), (t(86400), SLOT)],
    ids=["not yet", "just", "a day later"],
)
def test_a_due_slot_is_missed_once_no_run_took_it_for_missed_after(
    now: datetime, missed: datetime | None
) -> None:
    assert missed_slot(_endpoint(missed_after_seconds=600), now) == missed


def test_an_endpoint_without_missed_after_is_never_missed() -> None:
    assert missed_slot(_endpoint(), t(86400)) is None


def test_a_run_in_flight_is_not_missed_but_one_whose_lease_expired_is() -> None:
    running = replace(_endpoint(missed_after_seconds=60), lease_owner="w1", lease_until=t(130))

    assert missed_slot(running, t(120)) is None
    assert missed_slot(running, t(131)) == SLOT


def test_a_pause_in_force_misses_nothing_and_one_outlived_does() -> None:
    indefinitely = replace(_endpoint(missed_after_seconds=60), next_run_at=None, pause=Pause("x"))
    # A pause until t(300) planned the next run then; nobody ran it.
    outlived = replace(_endpoint(missed_after_seconds=60), next_run_at=t(300))

    assert missed_slot(indefinitely, t(86400)) is None
    assert missed_slot(outlived, t(359)) is None
    assert missed_slot(outlived, t(360)) == t(300)


def test_a_slot_caught_up_late_is_missed_from_its_grid_slot() -> None:
    # The call was moved off the slot (jitter, catch-up): the slot is what was missed.
    moved = replace(_endpoint(missed_after_seconds=60), next_run_at=t(50), next_slot_at=SLOT)

    assert missed_slot(moved, t(60)) == SLOT


def test_a_missed_episode_ends_once_its_slot_is_no_longer_the_one_missed() -> None:
    endpoint = _endpoint(missed_after_seconds=60)
    episode = missed_episode(endpoint, t(60))
    assert episode is not None
    served = replace(endpoint, next_run_at=t(120))

    assert (episode.subject, episode.kind, episode.started_at) == ("ep-probe", E.MISSED, SLOT)
    assert not missed_is_over(episode, endpoint, t(3600))
    assert missed_is_over(episode, served, t(3600))
    assert missed_is_over(episode, None, t(3600))


def test_missed_and_recovered_say_which_episode() -> None:
    endpoint = _endpoint(missed_after_seconds=60)
    episode = missed_episode(endpoint, t(60))
    assert episode is not None

    [missed] = opened_notifications(episode, endpoint, t(60))
    [recovered] = recovered_notifications(episode, endpoint, t(90))

    assert (missed.event, missed.url, recovered.event) == (E.MISSED, HOOK, E.RECOVERED)
    assert missed.payload["episode"] == {
        "kind": "missed",
        "started_at": SLOT.isoformat(),
        "recovered_at": None,
    }
    assert recovered.payload["episode"] == {
        "kind": "missed",
        "started_at": SLOT.isoformat(),
        "recovered_at": t(90).isoformat(),
    }


# --- late -------------------------------------------------------------------------------------


def test_a_run_started_more_than_late_after_past_its_slot_is_late() -> None:
    endpoint = _endpoint(late_after_seconds=30)

    assert late_since(endpoint, _run(t(30))) is None
    assert late_since(endpoint, _run(t(31))) == SLOT
    assert late_since(_endpoint(), _run(t(3600))) is None


def test_a_streak_of_late_runs_raises_late_once_and_recovered_when_one_is_in_time() -> None:
    ok = Response(status_code=200)
    first = _endpoint(late_after_seconds=30)
    raised: list[tuple[AlertEvent, str | None]] = []
    endpoint = first
    # Late, late, in time, late: two episodes.
    for slot, delay in ((SLOT, 45), (t(60), 50), (t(120), 1), (t(180), 40)):
        run = _run(slot + timedelta(seconds=delay), slot)
        ended = after_finish(endpoint, run, ok, run.started_at)
        finished = replace(run, status=RunStatus.SUCCESS, finished_at=run.started_at)
        for n in run_notifications(endpoint, ended, finished, run.started_at):
            episode = n.payload["episode"]
            assert isinstance(episode, dict)
            raised.append((n.event, str(episode["started_at"])))
        endpoint = ended

    assert raised == [
        (E.LATE, SLOT.isoformat()),
        (E.RECOVERED, SLOT.isoformat()),
        (E.LATE, t(180).isoformat()),
    ]
    assert endpoint.late_since == t(180)


def test_a_run_asked_for_by_hand_is_never_late() -> None:
    endpoint = _endpoint(late_after_seconds=30)
    run = _run(t(3600), trigger=RunTrigger.MANUAL)

    assert after_finish(endpoint, run, Response(status_code=200), t(3600)).late_since is None


# --- no workers -------------------------------------------------------------------------------


def test_a_gap_is_the_last_heartbeat_heard_when_none_is_recent() -> None:
    assert workers_gap([], 60, t(0)) is None
    assert workers_gap([t(-30), t(-100)], 60, t(0)) is None
    assert workers_gap([t(-61), t(-3600)], 60, t(0)) == t(-61)


def test_no_workers_goes_once_to_each_webhook_of_the_watched_endpoints() -> None:
    other = "https://hooks.example.com/other"
    watched = [
        _endpoint("b", missed_after_seconds=60, notify=(HOOK, other)),
        _endpoint("a", missed_after_seconds=60),
        _endpoint("c", notify=("https://hooks.example.com/unwatched",)),
    ]
    episode = gap_episode(t(-3600), SLOT)

    raised = gap_notifications(episode, watched, SLOT)

    assert (episode.subject, episode.endpoint_id, episode.recovered_at) == (WORKERS, None, SLOT)
    assert sorted((n.event, n.url, n.endpoint_id) for n in raised) == [
        (E.NO_WORKERS, HOOK, "ep-a"),
        (E.NO_WORKERS, other, "ep-b"),
        (E.RECOVERED, HOOK, "ep-a"),
        (E.RECOVERED, other, "ep-b"),
    ]
    started = [n.payload["episode"] for n in raised if n.event is E.NO_WORKERS]
    assert started[0] == {
        "kind": "no_workers",
        "started_at": t(-3600).isoformat(),
        "recovered_at": None,
    }


def test_an_episode_of_an_endpoint_names_it() -> None:
    episode = WatchEpisode("id", "ep-1", E.MISSED, SLOT, SLOT)

    assert episode.endpoint_id == "ep-1"
