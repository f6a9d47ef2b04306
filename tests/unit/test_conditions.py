"""Conditions (CEL): checked at apply against learnt schemas, evaluated without ever raising."""

from __future__ import annotations

import pytest

from cronpilot.domain.graph.schema_inference import ShapeNode, merge_document
from cronpilot.domain.rules.conditions import (
    MAX_COST,
    MAX_LENGTH,
    ConditionError,
    Response,
    Scope,
    check_condition,
    condition,
)


def shape(*documents: object) -> ShapeNode:
    root = ShapeNode()
    for document in documents:
        merge_document(root, document)
    return root


SCORE = shape({"fraud_rate": 0, "status": "ok", "errors": 0, "rows": [{"id": 1, "name": "a"}]})
OWN = Scope("check", True, {"check": SCORE, "fraud_score": SCORE, "fetch": None})
DEPENDANT = Scope("transform", False, {"fetch": SCORE})


def refusal(text: str, scope: Scope = OWN) -> ConditionError:
    with pytest.raises(ConditionError) as raised:
        check_condition(text, scope)
    return raised.value


@pytest.mark.parametrize(
    "text",
    [
        'body.status == "ok" && body.errors == 0',
        # A rate learnt from integers only still compares with a double (JSON has one
        # number type, CEL's checker two).
        "fraud_score.body.fraud_rate > 0.05",
        "body.errors == 0.0",
        "body.errors * 2 > 1 && body.rows[0].id in [1, 2.5]",
        "-body.errors < body.fraud_rate",
        "status == 200 && duration_ms < 250.5",
        'headers["content-type"] == "application/json"',
        "size(body.rows) > 0 && body.rows[0].id > 0",
        "has(body.maybe) && body.maybe == 1",
        '"body.nope" != body.status',
        "body.status.size() > 1",
        # No schema learnt for fetch: any field passes.
        "fetch.body.anything > 1 || fetch.status >= 500",
    ],
)
def test_a_condition_the_schemas_allow_is_accepted(text: str) -> None:
    assert check_condition(text, OWN).text == text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "body.count > 1",
            "at column 6: 'check' has answered no field 'count' in its response "
            "(its fields: errors, fraud_rate, rows, status)",
        ),
        (
            'fraud_score.body.rows[0].nam == "a"',
            "at column 26: 'fraud_score' has answered no field 'nam' in rows[0] "
            "(its fields: id, name)",
        ),
        ("body.status > 3", "at column 13: found no matching overload for '_>_'"),
        ("body.rows == true", "at column 11: found no matching overload for '_==_'"),
        ("body.status", "at column 1: a condition must be true or false, and this one is string"),
        # Numbers are typed as strings are: learnt from integers only, `errors` is an int.
        (
            'body.errors > "0"',
            "at column 13: found no matching overload for '_>_' applied to '(int, string)'",
        ),
        ("body.errors == 0.5 || body.status > 1", "at column 35: found no matching overload"),
        ("body.errors", "at column 1: a condition must be true or false, and this one is int"),
        ("fraud_score.body.fraud_rate + 1", "at column 1: a condition must be true or false"),
        ("body.errors ==", "at column 15: Syntax error: mismatched input '<EOF>'"),
        ("body.errors == 0 &&\n  nope", "at line 2 column 3: undeclared reference to 'nope'"),
        ("fetch.bod.x == 1", "at column 1: 'fetch' has no 'bod'"),
        ("body.rows.exists(r, r.id > 1)", "at column 11: exists() is not allowed"),
        ("body.rows.map(r, r.id).size() > 1", "at column 11: map() is not allowed"),
    ],
)
def test_a_condition_the_schemas_refuse_says_where_and_why(text: str, message: str) -> None:
    assert str(refusal(text)).startswith(message)


def test_an_undeclared_name_is_answered_with_the_names_a_condition_can_read() -> None:
    assert "reads the endpoints fetch" in str(refusal("fech.body.x > 1", DEPENDANT))
    # A dependant's condition reads its parents, not a response of its own.
    assert "undeclared reference to 'body.x'" in str(refusal("body.x > 1", DEPENDANT))


def test_an_endpoint_a_condition_cannot_name_is_refused_with_a_name_it_could_have() -> None:
    scope = Scope("check", False, {"fraud-score": None, "in": None})
    error = refusal("fraud-score.body.fraud_rate > 0.05", scope)
    assert error.column == 1
    assert "endpoint 'fraud-score' cannot be named" in error.reason
    assert "'fraud_score'" in error.reason
    assert "endpoint 'in' cannot be named" in refusal('"a" in in.body.x', scope).reason


def test_the_size_and_cost_limits_are_enforced() -> None:
    long = "body.errors == 0 || " * (MAX_LENGTH // 20) + "true"
    assert f"over the limit of {MAX_LENGTH:,}" in str(refusal(long))
    costly = " || ".join(["status == 1"] * (MAX_COST // 3))
    assert len(costly) < MAX_LENGTH
    assert f"over the cost limit of {MAX_COST}" in str(refusal(costly))
    assert "empty condition" in str(refusal("  "))


def test_evaluation_gives_true_false_with_what_it_read_or_the_error() -> None:
    check = condition('body.status == "ok" && body.errors == 0')
    assert check.evaluate(Response({"status": "ok", "errors": 0}, 200, 1.0), {}).holds
    failed = check.evaluate(Response({"status": "ok", "errors": 2}, 200, 1.0), {})
    assert not failed.holds
    assert failed.describe() == 'false (body.status = "ok", body.errors = 2)'
    missing = check.evaluate(Response({"status": "ok"}, 200, 1.0), {})
    assert (missing.holds, missing.describe()) == (False, 'error: Key not found in map : "errors"')


@pytest.mark.parametrize(
    ("text", "body", "described"),
    [
        # CEL's quirks this project relies on, pinned.
        ("body.n == 1.0", {"n": 1}, "true"),
        ("body.n < 1.5", {"n": 1}, "true"),
        ("body.missing == 1 || true", {}, "true"),
        ("true || body.missing == 1", {}, "true"),
        ("body.missing == 1 && false", {}, "false (body.missing = absent)"),
        ("has(body.missing)", {}, "false (body.missing = absent)"),
        ("body.n == null", {"n": None}, "true"),
        ('body.n == "1"', {"n": 1}, "false (body.n = 1)"),
        ("body.n > 1", {"n": "x"}, "error: No matching overloads found : _>_(string, int64)"),
        ("body.x.y == 1", {"x": [1]}, "error: Applying SELECT to non-message type"),
        ("1 / body.n == 1", {"n": 0}, "error: divide by zero"),
        ("body.n", {"n": 3}, "error: 3 is neither true nor false"),
    ],
)
def test_evaluation_never_raises(text: str, body: object, described: str) -> None:
    verdict = condition(text).evaluate(Response(body, 200, 1.0), {})
    assert verdict.describe() == described


def test_other_endpoints_are_read_by_name_and_a_missing_one_is_an_error() -> None:
    rule = condition("fraud_score.body.fraud_rate > 0.05 && fraud_score.status == 200")
    assert rule.roots == {"fraud_score"}
    high = Response({"fraud_rate": 0.07}, 200, 3.0)
    assert rule.evaluate(None, {"fraud_score": high}).holds
    low = rule.evaluate(None, {"fraud_score": Response({"fraud_rate": 0}, 200, 3.0)})
    assert low.describe() == "false (fraud_score.body.fraud_rate = 0, fraud_score.status = 200)"
    assert rule.evaluate(None, {}).error == "no response of 'fraud_score' to read"


def test_compiled_programs_are_cached() -> None:
    assert condition("status == 204") is condition("status == 204")
    assert check_condition("status == 204", OWN) is condition("status == 204")


def test_evaluation_reads_only_the_fields_named() -> None:
    """A body is cut to what the condition names before CEL converts it (whole, and a 100 KB
    body costs milliseconds): an integer CEL cannot hold elsewhere in it does not matter, and
    one it reads is an error, not an exception."""
    body = {"rows": [1, 2], "meta": {"a": 1, "huge": 10**30}, "other": 10**30}
    spoken = condition("size(body.rows) == 2 && body.meta.a == 1 && !has(body.meta.c)")
    assert spoken.evaluate(Response(body, 200, 1.0), {}).holds
    verdict = condition("body.meta.huge > 1").evaluate(Response(body, 200, 1.0), {})
    assert verdict.error is not None
    assert "out of range" in verdict.error
