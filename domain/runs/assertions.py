"""`success_when`: a response is judged by the endpoint's condition on it (decision 0023).

Only a response that would succeed is judged: a failed call keeps its own kind (and its
retries). One that does not satisfy the condition, or on which it cannot be evaluated, fails
with `ErrorKind.ASSERTION`; that failure is not retried within the slot (`domain.runs.retries`
retries timeouts, connections, 429 and 5xx only): the same answer would be judged the same.
"""

from __future__ import annotations

from dataclasses import replace

from cronpilot.domain.model import EndpointSpec, ErrorKind, Response
from cronpilot.domain.rules import conditions
from cronpilot.domain.runs.excerpt import excerpt


def judged(spec: EndpointSpec, response: Response) -> Response:
    """`response`, failed with `ErrorKind.ASSERTION` when `spec.success_when` does not hold."""
    text = spec.success_when
    if text is None or not response.ok:
        return response
    try:
        condition = conditions.condition(text)
    except conditions.ConditionError as error:
        # Checked when applied: only a change of the limits since could bring this here.
        return _failed(response, text, conditions.Verdict(False, str(error)))
    duration_ms = None
    if response.started_at is not None and response.finished_at is not None:
        duration_ms = (response.finished_at - response.started_at).total_seconds() * 1000
    headers = {}
    if "headers" in condition.roots:
        headers = {name.lower(): value for name, value in response.headers.items()}
    own = conditions.Response(response.body, response.status_code, duration_ms, headers)
    verdict = condition.evaluate(own, {})
    return response if verdict.holds else _failed(response, text, verdict)


def _failed(response: Response, text: str, verdict: conditions.Verdict) -> Response:
    message = verdict.explain(f"success_when {excerpt(text, 60)!r}")
    return replace(response, error_kind=ErrorKind.ASSERTION, error_message=message)
