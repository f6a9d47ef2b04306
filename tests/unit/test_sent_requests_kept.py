"""`SentRequests` keeps each endpoint's declaration masked: every request it gives is the one
`sent_request` makes of the call, before and after a declaration changes."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from cronpilot.domain.access.secrets import MASK
from cronpilot.domain.model import Claim, DagTrigger, Endpoint, EndpointSpec, Schedule
from cronpilot.domain.runs.sent_request import sent_request
from cronpilot.domain.runs.transitions import claim_of
from cronpilot.scheduler.requests import RUN_ID_HEADER, SentRequests, request_for

NOW = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)


def _claim(run_id: str = "r1", **spec: object) -> Claim:
    fields: dict[str, object] = {
        "name": "e",
        "url": "https://ann:pw@api.example.com/v1?token=abc&page=2",
        "schedule": Schedule(interval_seconds=60),
        "headers": {"Authorization": "Bearer s3cret", "X-Page": "2" * 600},
        **spec,
    }
    endpoint = Endpoint("id", "job", "job", EndpointSpec(**fields), next_run_at=NOW)  # type: ignore[arg-type]
    return claim_of(endpoint, run_id, "trace", NOW + timedelta(seconds=60))


def _both(kept: SentRequests, claim: Claim) -> None:
    request = request_for(claim)
    assert kept.of(claim, request) == sent_request(request)


def test_a_kept_declaration_gives_what_masking_the_call_gives() -> None:
    kept = SentRequests()
    for run_id in ("r1", "r2", "r3"):
        _both(kept, _claim(run_id))
    sent = kept.of(_claim("r4"), request_for(_claim("r4")))
    assert sent.headers["Authorization"] == MASK
    assert sent.headers[RUN_ID_HEADER] == "r4"
    assert "abc" not in sent.url


@pytest.mark.parametrize(
    "changed",
    [
        {"url": "https://api.example.com/v2?api_key=zz"},
        {"headers": {"X-Token": "t0ken"}},
        {"headers": {RUN_ID_HEADER: "declared"}},
        {"method": "delete"},
        {"method": "post", "body": {"q": 1}},
    ],
)
def test_a_changed_declaration_is_masked_again(changed: dict[str, object]) -> None:
    kept = SentRequests()
    _both(kept, _claim())
    _both(kept, _claim("r2", **changed))
    _both(kept, _claim("r3"))


def test_a_dag_call_is_masked_whole() -> None:
    kept = SentRequests()
    dag = DagTrigger(dag_run_id="d", root="up", parent_trace_id="p")
    claim = replace(_claim(), dag=dag)
    _both(kept, claim)


def test_past_its_size_it_starts_afresh() -> None:
    kept = SentRequests(size=1)
    _both(kept, _claim())
    other = replace(_claim(), endpoint=replace(_claim().endpoint, id="other"))
    _both(kept, other)
    _both(kept, _claim("r9"))
