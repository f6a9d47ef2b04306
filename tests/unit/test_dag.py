"""DAG-run planning (`domain.graph.dag.advance`) and the declared DAG (`with_dependants`)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cronpilot.domain.errors import InvalidDependency
from cronpilot.domain.graph.dag import (
    ALONE,
    DagPlan,
    DagWait,
    ParentOutcome,
    advance,
    awaited_parents,
)
from cronpilot.domain.graph.dependencies import with_dependants
from cronpilot.domain.model import (
    Endpoint,
    EndpointSpec,
    Pause,
    RunStatus,
    Schedule,
    ScheduleSource,
)
from cronpilot.domain.schedule.governor import plan_next_run

T0 = datetime(2030, 1, 1, tzinfo=UTC)


def _spec(name: str, *upstreams: str, **fields: Any) -> EndpointSpec:
    schedule = Schedule() if upstreams else Schedule(interval_seconds=60)
    return EndpointSpec(name, f"https://x.io/{name}", schedule, depends_on=upstreams, **fields)


def _job(*specs: EndpointSpec) -> dict[str, Endpoint]:
    return {s.name: Endpoint(f"id-{s.name}", "job", "j", s) for s in with_dependants(specs)}


OK = ParentOutcome("run-1", "trace-1", ok=True)


def test_parents_the_root_cannot_reach_are_not_waited_for() -> None:
    deps = {"r1": (), "r2": (), "a": ("r1",), "join": ("a", "r2")}
    assert awaited_parents(deps, "r1", "join") == {"a"}
    assert awaited_parents(deps, "r2", "join") == {"r2"}
    assert awaited_parents({"r": (), "a": ("r",), "b": ("r",), "j": ("a", "b")}, "r", "j") == {
        "a",
        "b",
    }


def test_a_dependant_waits_for_every_parent_then_starts_as_the_last_ones_child() -> None:
    job = _job(_spec("r"), _spec("a", "r"), _spec("b", "r"), _spec("j", "a", "b"))
    plan = advance(list(job.values()), {}, job["a"], OK, dag=("dag-1", "r"), worker_id="w", now=T0)
    [wait] = plan.waiting.values()
    assert (wait.endpoint_id, set(wait.arrived), plan.start) == ("id-j", {"a"}, [])

    second = ParentOutcome("run-2", "trace-2", ok=True)
    plan = advance(
        list(job.values()),
        {"id-j": wait},
        job["b"],
        second,
        dag=("dag-1", "r"),
        worker_id="w",
        now=T0,
    )
    [(node, done, trigger)] = plan.start
    assert node.name == "j"
    assert plan.finished == [done]
    assert plan.waiting == {}
    assert (trigger.dag_run_id, trigger.root, trigger.parent_trace_id) == ("dag-1", "r", "trace-2")
    assert trigger.parents == {"a": "run-1", "b": "run-2"}


def test_independent_dependants_all_start_at_once() -> None:
    job = _job(_spec("r"), _spec("a", "r"), _spec("b", "r"), _spec("c", "r"))
    plan = advance(list(job.values()), {}, job["r"], OK, dag=("d", "r"), worker_id="w", now=T0)
    assert sorted(node.name for node, _, _ in plan.start) == ["a", "b", "c"]


def test_a_node_re_run_alone_reports_to_no_dependant() -> None:
    job = _job(_spec("r"), _spec("a", "r"), _spec("b", "a"))
    members = list(job.values())
    assert advance(members, {}, job["a"], OK, dag=("d", ALONE), worker_id="w", now=T0) == DagPlan()
    # A failure neither: nothing downstream is skipped.
    failed = ParentOutcome("x", "t", ok=False)
    assert advance(members, {}, job["a"], failed, dag=("d", ALONE), worker_id="w", now=T0) == (
        DagPlan()
    )


@pytest.mark.parametrize(
    ("outcome", "fields", "reason"),
    [
        (ParentOutcome("x", "t", ok=False), {}, "upstream 'r' failed"),
        (
            ParentOutcome("x", "t", ok=True, changed=False),
            {"only_if_changed": True},
            "only_if_changed",
        ),
        (ParentOutcome("x", "t", ok=True), {"paused": True}, "paused"),
    ],
)
def test_skips_are_recorded_with_their_reason_and_propagate(
    outcome: ParentOutcome, fields: dict[str, Any], reason: str
) -> None:
    paused = fields.pop("paused", False)
    job = _job(_spec("r"), _spec("a", "r", **fields), _spec("b", "a"))
    if paused:
        job["a"] = Endpoint("id-a", "job", "j", job["a"].spec, pause=Pause("by hand"))
    plan = advance(list(job.values()), {}, job["r"], outcome, dag=("d", "r"), worker_id="w", now=T0)
    assert plan.start == []
    skipped_a, skipped_b = plan.skipped
    assert (skipped_a.endpoint_id, skipped_a.status, skipped_a.parent_trace_id) == (
        "id-a",
        RunStatus.SKIPPED,
        "t",
    )
    assert reason in (skipped_a.error_message or "")
    assert skipped_b.parent_trace_id == skipped_a.trace_id
    assert skipped_b.error_message == "skipped: upstream 'a' was skipped"


def test_a_dependant_is_skipped_while_its_own_retry_after_holds() -> None:
    """It answered 429 with `Retry-After: 600` at T0: DAG runs before T0 + 600 s skip it."""
    job = _job(_spec("r"), _spec("a", "r"))
    members = [job["r"], replace(job["a"], retry_after_at=T0 + timedelta(seconds=600))]

    def plan_at(seconds: float) -> DagPlan:
        now = T0 + timedelta(seconds=seconds)
        return advance(members, {}, job["r"], OK, dag=("d", "r"), worker_id="w", now=now)

    early = plan_at(10)
    [skipped] = early.skipped
    assert (early.start, skipped.endpoint_id, skipped.status) == ([], "id-a", RunStatus.SKIPPED)
    assert skipped.error_message == (
        "skipped: the endpoint asked not to be called before 2030-01-01T00:10:00+00:00"
        " (Retry-After)"
    )
    assert [node.name for node, _, _ in plan_at(600).start] == ["a"]


def test_only_if_changed_runs_when_any_parent_changed() -> None:
    job = _job(
        _spec("r"), _spec("a", "r"), _spec("b", "r"), _spec("j", "a", "b", only_if_changed=True)
    )
    same = ParentOutcome("1", "t1", ok=True, changed=False)
    wait = DagWait("d", "id-j", "r", T0, {"a": same})
    changed = ParentOutcome("2", "t2", ok=True, changed=True)
    plan = advance(
        list(job.values()), {"id-j": wait}, job["b"], changed, dag=("d", "r"), worker_id="w", now=T0
    )
    assert [node.name for node, _, _ in plan.start] == ["j"]


@pytest.mark.parametrize(
    ("specs", "where", "reason"),
    [
        (
            [_spec("a"), _spec("b", "nope")],
            (1, "depends_on"),
            "unknown upstream 'nope' (not in this job)",
        ),
        (
            [_spec("a", "c"), _spec("b", "a"), _spec("c", "b")],
            (0, "depends_on"),
            "dependency cycle a -> b -> c -> a",
        ),
        ([_spec("a", "a")], (0, "depends_on"), "dependency cycle a -> a"),
        (
            [
                _spec("a"),
                _spec("x"),
                EndpointSpec("b", "https://x.io/{{ x.id }}", Schedule(), depends_on=("a",)),
            ],
            (2, "url"),
            "template {{ x.id }} names 'x', which is not in depends_on",
        ),
    ],
)
def test_a_bad_dag_is_refused_naming_the_endpoint_and_field(
    specs: list[EndpointSpec], where: tuple[int, str], reason: str
) -> None:
    with pytest.raises(InvalidDependency) as caught:
        with_dependants(specs)
    assert (caught.value.index, caught.value.field) == where
    assert caught.value.reason == reason


def test_dependants_are_derived_and_a_dependant_has_no_time_of_its_own() -> None:
    job = _job(_spec("r"), _spec("a", "r"), _spec("b", "r"))
    assert job["r"].spec.dependants == ("a", "b")
    assert job["a"].spec.dependants == ()
    planned = plan_next_run(job["a"], T0)
    assert (planned.at, planned.source) == (None, ScheduleSource.DAG)
