"""schemathesis against the served /openapi.json: every operation, valid and invalid input;
no 500, and every error a problem document."""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode

from tests.integration.api.conftest import bearer

EXAMPLES = 8
"""Per operation and mode: about 30 operations in well under a minute."""


def _check(case: schemathesis.Case, base: str, secret: str) -> None:
    response = case.call(base_url=base, headers=bearer(secret))
    where = f"{case.method} {case.formatted_path}"
    assert response.status_code < 500, f"{where}: {response.status_code} {response.text}"
    if response.status_code >= 400:
        assert response.headers["content-type"] == ["application/problem+json"], where
        problem = response.json()
        assert {"type", "title", "status", "detail"} <= problem.keys(), where
        assert problem["status"] == response.status_code, where


def test_every_operation_answers_without_500_and_errors_are_problems(
    served: tuple[str, str],
) -> None:
    base, secret = served
    schema = schemathesis.openapi.from_url(f"{base}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 25
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=EXAMPLES,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            def check(case: schemathesis.Case) -> None:
                _check(case, base, secret)

            check()
