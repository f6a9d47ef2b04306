"""A rule's condition is compiled and type-checked at apply, against what the job's endpoints
have answered: one line naming file, job, endpoint, `rules[N].when` and the position, and
nothing written. On the in-memory store (every store hands out the same schemas)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cronpilot.adapters.jobs_file import parse_declarations
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.model import Response
from cronpilot.scheduler.learning import RunLearner
from cronpilot.usecases.declarations import apply_declarations, preview_declarations
from tests.contract.builders import run_once
from tests.support.clock import FakeClock
from tests.support.memory_store import MemoryStore

T0 = datetime(2030, 1, 1, tzinfo=UTC)
JOBS = """\
jobs:
  - name: flash
    endpoints:
      - name: fraud_score
        url: https://93.184.216.34/score
        interval: 30s
      - name: investigator
        url: https://93.184.216.34/investigate
        interval: 1m
        rules:
          - {when: 'true', then: baseline}
          - {when: 'WHEN', then: resume}
"""
WHERE = "jobs.yaml: job 'flash' endpoint 'investigator' field 'rules[1].when'"


async def _apply(store: MemoryStore, when: str) -> None:
    declarations = parse_declarations(JOBS.replace("WHEN", when), "jobs.yaml", [])
    await apply_declarations(
        store.unit_of_work, None, declarations, "jobs.yaml", actor="cli:ann@web-1", now=T0
    )


async def _refusal(store: MemoryStore, when: str) -> str:
    with pytest.raises(InvalidConfig) as raised:
        await _apply(store, when)
    return str(raised.value)


@pytest.mark.parametrize(
    ("when", "reason"),
    [
        ("fraud_score.body.fraud_rate >", "at column 30: Syntax error: mismatched input '<EOF>'"),
        ("fraud_score.status + 1", "a condition must be true or false, and this one is int"),
        (
            "fraud.body.fraud_rate > 0.05",
            "undeclared reference to 'fraud.body.fraud_rate': a condition here reads its own body",
        ),
        ("x" * 1001, "at column 1001: 1,001 characters, over the limit of 1,000"),
        ('headers["x-fraud"] == "high"', "a rule reads the stored responses, and their headers"),
    ],
)
async def test_a_condition_that_does_not_check_is_refused_writing_nothing(
    when: str, reason: str
) -> None:
    store = MemoryStore()

    message = await _refusal(store, when)

    assert message.startswith(f"{WHERE}: ")
    assert reason in message
    assert "\n" not in message
    assert await store.catalog.list_jobs() == []


async def test_a_field_the_learnt_schema_never_saw_names_those_it_did() -> None:
    store = MemoryStore()
    await _apply(store, "fraud_score.body.fraud_rate > 0.05")
    await run_once(store, T0, Response(status_code=200, body={"fraud_rate": 0.01, "orders": 9}))
    score = await store.catalog.get_endpoint("flash/fraud_score")
    schema = await store.schemas.get_output_schema(score.id)
    assert schema is None
    await RunLearner(store.unit_of_work, store.reading, FakeClock(T0)).learn(score)

    message = await _refusal(store, "fraud_score.body.fraud_ratio > 0.05")

    assert message == (
        f"{WHERE}: at column 18: 'fraud_score' has answered no field 'fraud_ratio' in its "
        "response (its fields: fraud_rate, orders)"
    )
    declarations = parse_declarations(
        JOBS.replace("WHEN", "fraud_score.body.fraud_ratio > 0.05"), "jobs.yaml", []
    )
    with pytest.raises(InvalidConfig, match="fraud_ratio"):
        await preview_declarations(store.reading, declarations, "jobs.yaml")
