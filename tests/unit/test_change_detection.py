"""Change detection: which learnt fields are volatile (clocks, ids, counters, changing in almost
every document), the comparable hash that leaves them and `change_ignores` out, the marks
`schema show` puts on them, and the example's health checks that rely on it."""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cronpilot.adapters.jobs_file import example_jobs_file, parse_declarations
from cronpilot.domain.graph.change_detection import (
    comparable_hash,
    ignored_fields,
    marked_schema,
    nothing_compared,
    volatile_fields,
)
from cronpilot.domain.graph.dag import changes_matter, response_changed
from cronpilot.domain.graph.dependencies import with_dependants
from cronpilot.domain.graph.schema_inference import (
    VOLATILE_AFTER,
    ShapeNode,
    merge_document,
    to_json_schema,
)
from cronpilot.domain.model import (
    BodyAbsence,
    Endpoint,
    EndpointSpec,
    Response,
    Run,
    RunTrigger,
    Schedule,
)
from cronpilot.domain.runs.transitions import finished_run, queued_run
from cronpilot.harness.simulator.scenario import Scenario

T0 = datetime(2030, 1, 7, 12, tzinfo=UTC)


def _learnt(documents: list[Any]) -> ShapeNode:
    root = ShapeNode()
    for document in documents:
        merge_document(root, document)
    return root


def _health(n: int) -> dict[str, Any]:
    """A health check's n-th answer: the same status, a new time, id, counter and latency."""
    return {
        "status": "ok",
        "checked_at": (T0 + timedelta(seconds=5 * n)).isoformat(),
        "meta": {"request_id": str(uuid.uuid4()), "region": "eu"},
        "seq": 1000 + n,
        "latency_ms": [12.5, 8.1, 30.2, 9.9][n % 4],
        "uptime_s": 3600 + 5 * n,
        "rows": [{"at": (T0 + timedelta(seconds=n)).isoformat()}],
        "since": T0.isoformat(),
        "request id": str(uuid.uuid4()),
    }


def test_clocks_ids_and_counters_changing_every_time_are_volatile() -> None:
    root = _learnt([_health(n) for n in range(VOLATILE_AFTER)])

    # Not the latency (it changes, but is no clock), the constant time, a field in an array,
    # nor a key no path can name.
    assert volatile_fields(root) == ("checked_at", "meta.request_id", "seq", "uptime_s")


def test_too_few_values_say_nothing_yet() -> None:
    assert volatile_fields(_learnt([_health(n) for n in range(VOLATILE_AFTER - 1)])) == ()


def test_a_clock_that_stands_still_now_and_then_is_data() -> None:
    # One time in three repeats: the field changes in 2/3 of the documents, not almost all.
    times = [(T0 + timedelta(minutes=n // 3)).isoformat() for n in range(3 * VOLATILE_AFTER)]
    assert volatile_fields(_learnt([{"updated_at": at} for at in times])) == ()


def test_a_field_sometimes_null_is_not_volatile() -> None:
    documents = [{"at": (T0 + timedelta(seconds=n)).isoformat()} for n in range(VOLATILE_AFTER)]
    documents[3] = {"at": None}
    assert volatile_fields(_learnt(documents)) == ()


def test_a_number_that_does_not_rise_is_not_a_counter() -> None:
    falling = [{"left": 100 - n} for n in range(VOLATILE_AFTER)]
    assert volatile_fields(_learnt(falling)) == ()


def test_the_counts_survive_a_save_and_go_on() -> None:
    root = _learnt([_health(n) for n in range(VOLATILE_AFTER - 1)])
    again = ShapeNode.from_dict(root.to_dict())
    assert again == root
    merge_document(again, _health(VOLATILE_AFTER))
    assert "checked_at" in volatile_fields(again)
    # The JSON Schema says nothing of the counts.
    assert "watched" not in json.dumps(to_json_schema(again))


def _endpoint(ignores: tuple[str, ...] = (), volatile: tuple[str, ...] = ()) -> Endpoint:
    spec = EndpointSpec("health", "https://x.io", Schedule(), change_ignores=ignores)
    return Endpoint("e", "j", "job", spec, volatile_fields=volatile)


def _run(body: Any, digest: str | None = "raw", absence: BodyAbsence | None = None) -> Run:
    """A successful run that answered `body` (hashed as `digest`)."""
    response = Response(200, body=body, body_absence=absence, body_hash=digest)
    return finished_run(_QUEUED, response, T0)


_QUEUED = queued_run(
    _endpoint(), RunTrigger.MANUAL, slot_at=T0, due_at=T0, requested_by="test", now=T0
)


def test_the_comparable_hash_leaves_ignored_fields_out() -> None:
    ignored = ignored_fields(_endpoint(("latency_ms", "rows[0].at"), ("checked_at",)))
    first, second = _health(1), _health(2)
    same_data = {**second, "meta": first["meta"], "seq": first["seq"]}
    same_data |= {"uptime_s": first["uptime_s"], "request id": first["request id"]}

    assert comparable_hash(_run(first), ignored) == comparable_hash(_run(same_data), ignored)
    assert comparable_hash(_run(first), ignored) != comparable_hash(
        _run({**same_data, "status": "degraded"}), ignored
    )
    # Key order is no change either; a list keeps its positions.
    assert comparable_hash(_run(dict(reversed(first.items()))), ignored) == comparable_hash(
        _run(first), ignored
    )
    assert comparable_hash(_run({"rows": [1, 2]}), (("rows", 0),)) != comparable_hash(
        _run({"rows": [2]}), (("rows", 0),)
    )


def test_a_body_left_empty_by_its_volatile_fields_has_nothing_to_compare() -> None:
    counter = _endpoint(("seconds_since_change",), ("version",))
    newest_first = [_run({"version": 8, "seconds_since_change": 1.0}), _run({"version": 7})]
    assert nothing_compared(counter, newest_first)
    # Data left over, nothing ignored, or no body kept: compared as ever.
    assert not nothing_compared(counter, [_run({"version": 8, "content": "revision 8"})])
    assert not nothing_compared(_endpoint(), [_run({})])
    assert not nothing_compared(counter, [_run(None, absence=BodyAbsence.NOT_JSON)])


@pytest.mark.parametrize("absence", [BodyAbsence.NOT_JSON, BodyAbsence.TOO_LARGE])
def test_an_upstream_answer_that_was_not_read_counts_as_changed(absence: BodyAbsence) -> None:
    # Nothing was hashed: whether it changed is unknown, and only_if_changed must not skip the
    # dependant for ever.
    unread = _run(None, None, absence)
    assert response_changed(unread, unread)
    assert not response_changed(_run({"a": 1}, "h"), _run({"a": 1}, "h"))
    assert response_changed(_run({"a": 2}, "h2"), _run({"a": 1}, "h"))


def test_without_anything_to_ignore_or_a_body_the_hash_is_the_bodys_own() -> None:
    assert comparable_hash(_run({"a": 1}, "h1"), ()) == "h1"
    assert comparable_hash(_run(None, None), (("a",),)) is None


@pytest.mark.parametrize(
    ("endpoint", "changed"),
    [
        (_endpoint(), True),
        (_endpoint(("checked_at",)), False),
        (_endpoint((), ("checked_at",)), False),
    ],
)
def test_a_dag_parent_changed_unless_only_ignored_fields_did(
    endpoint: Endpoint, changed: bool
) -> None:
    previous = _run({"n": 1, "checked_at": "2030-01-07T12:00:00Z"}, "h1")
    run = replace(previous, id="r2", body={"n": 1, "checked_at": "2030-01-07T12:00:05Z"})
    assert (
        response_changed(replace(run, body_hash="h2"), previous, ignored_fields(endpoint))
        is changed
    )


def test_schema_show_marks_what_change_detection_leaves_out() -> None:
    root = _learnt([_health(n) for n in range(2)])
    endpoint = _endpoint(("latency_ms", "rows[0].at", "absent.field"), ("meta.request_id",))

    shown = marked_schema(to_json_schema(root), endpoint)

    properties = shown["properties"]
    assert properties["meta"]["properties"]["request_id"]["x-volatile"] is True
    assert properties["latency_ms"]["x-change-ignored"] is True
    assert properties["rows"]["items"]["properties"]["at"]["x-change-ignored"] is True
    assert "x-volatile" not in properties["status"]
    assert "absent" not in properties


def test_a_run_is_compared_with_the_last_only_for_a_dependant_that_skips_on_no_change() -> None:
    specs = [
        EndpointSpec("fetch", "https://x.io", Schedule(interval_seconds=60)),
        EndpointSpec("load", "https://x.io", Schedule(), depends_on=("fetch",)),
    ]
    job = [Endpoint(s.name, "j", "job", s) for s in with_dependants(specs)]
    fetch = job[0]
    assert not changes_matter(fetch, job)
    skipping = replace(job[1], spec=replace(job[1].spec, only_if_changed=True))
    assert changes_matter(fetch, [fetch, skipping])
    assert not changes_matter(skipping, [fetch, skipping])


def test_the_examples_health_checks_change_only_when_their_status_does() -> None:
    # They answer a new time and latency on every call: declared in `change_ignores`, those
    # are no change, so a region whose status holds is not tightened (the demo's health/* was,
    # to the min clamp, until the change limit refused it).
    env = {"SIMULATOR_URL": "http://127.0.0.1:1"}
    text = example_jobs_file().read_text(encoding="utf-8")
    declared = parse_declarations(text, "jobs.yaml", ["127.0.0.1/32"], env)
    [health] = [d for d in declared if d.job.name == "health"]
    scenario = Scenario(seed=7, started_at=T0)

    for spec in (s for s in health.endpoints if not s.name.endswith("_failover")):
        ignored = ignored_fields(Endpoint("e", "j", "health", spec))
        answers = [scenario.health(spec.name, 0.5 * n) for n in range(400)]
        by_status: dict[str, set[str | None]] = {}
        for answer in answers:
            hashed = comparable_hash(_run(answer, repr(answer)), ignored)
            by_status.setdefault(answer["status"], set()).add(hashed)
        assert len({a["checked_at"] for a in answers}) == len(answers)
        assert all(len(hashes) == 1 for hashes in by_status.values()), spec.name
        assert len(by_status) > 1, spec.name
