"""`evolved` makes what `dataclasses.replace` makes, for every value of the model."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from cronpilot.domain import model
from cronpilot.domain.evolve import evolved
from cronpilot.domain.model import Endpoint, EndpointSpec, Response, Run, RunStatus, Schedule

NOW = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)
SPEC = EndpointSpec("e", "http://127.0.0.1/e", Schedule(interval_seconds=60))
ENDPOINT = Endpoint("id", "job", "job", SPEC, next_run_at=NOW)
RUN = Run(
    id="r",
    endpoint_id="id",
    job_id="job",
    trace_id="t",
    trigger=model.RunTrigger.SCHEDULE,
    schedule_source=model.ScheduleSource.BASELINE,
    status=RunStatus.RUNNING,
    slot_at=NOW,
    started_at=NOW,
    worker_id="w",
)


@pytest.mark.parametrize(
    ("value", "changes"),
    [
        (ENDPOINT, {"failure_count": 3, "lease_owner": "w"}),
        (RUN, {"status": RunStatus.SUCCESS, "body": {"a": [1]}, "duration_ms": 2.5}),
        (Response(200, started_at=NOW), {"attempts": (), "request": None}),
        (SPEC, {}),
    ],
)
def test_a_copy_equals_what_replace_makes(value: object, changes: dict[str, object]) -> None:
    copy = evolved(value, **changes)
    assert copy == dataclasses.replace(value, **changes)  # type: ignore[type-var]
    assert copy is not value
    assert type(copy) is type(value)
    for field in dataclasses.fields(value):  # type: ignore[arg-type]
        expected = changes.get(field.name, getattr(value, field.name))
        assert getattr(copy, field.name) is expected


def test_the_original_is_left_as_it_was() -> None:
    evolved(ENDPOINT, failure_count=9)
    assert ENDPOINT.failure_count == 0


def test_a_name_that_is_no_field_is_refused() -> None:
    with pytest.raises(TypeError, match="no field 'failures'"):
        evolved(ENDPOINT, failures=1)


def test_a_class_whose_init_does_more_goes_through_replace() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Checked:
        n: int

        def __post_init__(self) -> None:
            if self.n < 0:
                raise ValueError("negative")

    with pytest.raises(ValueError, match="negative"):
        evolved(Checked(1), n=-1)
