"""Conditions: CEL expressions over what endpoints answered (decision 0023).

Public API:

- `Scope(endpoint, reads_own, schemas)` says what a condition of `endpoint` may read: its own
  response (`body`, `status`, `duration_ms`, `headers`) when `reads_own`, and the other
  endpoints of the job named in `schemas` (`fetch.body.rows[0].id`, `fetch.status`,
  `fetch.duration_ms`); `schemas` maps names to learnt output schemas (`ShapeNode`, None
  when none is learnt yet), the endpoint's own included.
- `check_condition(text, scope) -> Condition`, at apply: parses, refuses what is over the size
  limit (`MAX_LENGTH`) or the cost limit (`MAX_COST`), the comprehension macros, an endpoint
  name a condition cannot address (`fraud-score`) and a field a learnt schema never saw
  (naming the fields it did see), then type-checks with CEL against the schemas; the result
  must be a boolean. Raises `ConditionError` (`reason`, `line`, `column`).
- `condition(text) -> Condition`: the compiled program for a text checked before (cached, so
  the hot path never compiles twice); raises `ConditionError` only for text that would not
  pass `check_condition` with no schema.
- `Condition.evaluate(own, others) -> Verdict`: `own` the endpoint's `Response` (or None),
  `others` the named endpoints' latest. Never raises: a missing field, a wrong type, a
  division by zero or a response not there is a `Verdict` with `error` set and `holds` False.
  `Verdict.describe()` says the value and what it read (`false (fetch.body.records = 0)`),
  `Verdict.explain(label)` the same in a sentence about the condition `label` names.
- `Condition.roots`: the variables it reads (so a caller loads only those responses).

Every learnt type is declared to the checker, numbers too (`int` for a field learnt from
integers only, `double` once it held another number), so `body.status > 3` on a string and
`fetch.body.records > "0"` on a number are refused at apply, and so is a condition that is
not a boolean (`fetch.body.records`). JSON has one number type, though, and CEL's checker
refuses `int < double` (`fraud_rate > 0` for a rate learnt as a number) where evaluation
compares numbers by value: a condition whose only type errors mix kinds of number is checked
with its numbers as `dyn`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from cel_expr_python import cel

from cronpilot.domain.graph.field_paths import (
    MISSING,
    FieldPath,
    canonical,
    follow,
    parse_field_path,
    unseen_field,
)
from cronpilot.domain.graph.schema_inference import MAX_DEPTH, ShapeNode
from cronpilot.domain.model import JSON
from cronpilot.domain.rules.condition_text import (
    MAX_COST,
    MAX_LENGTH,
    RESERVED,
    TYPE_NAMES,
    ConditionError,
    Reference,
    addressable,
    blank_strings,
    check_limits,
    error_at,
    name_in,
    references,
)
from cronpilot.domain.runs.excerpt import excerpt

__all__ = [
    "MAX_COST",
    "MAX_LENGTH",
    "Condition",
    "ConditionError",
    "Response",
    "Scope",
    "Verdict",
    "check_condition",
    "condition",
]

OWN = ("body", "status", "duration_ms", "headers")
"""The endpoint's own response, as variables."""
PARTS = ("body", "status", "duration_ms")
"""What a condition reads of another endpoint's response (its headers are not kept)."""
_RUNTIME = cel.NewEnv()
_CEL_ERROR = re.compile(r"ERROR: <input>:(\d+):(\d+): ([^\n]*)")
_OBJECT = cel.Type.Map(cel.Type.STRING, cel.Type.DYN)
_OWN_TYPES = {
    "status": cel.Type.INT,
    "duration_ms": cel.Type.DYN,
    "headers": cel.Type.Map(cel.Type.STRING, cel.Type.STRING),
}


@dataclass(frozen=True, slots=True)
class Response:
    """One response as a condition reads it."""

    body: JSON
    status: int | None
    duration_ms: float | None
    headers: Mapping[str, str] = field(default_factory=dict)
    """Names in lower case; only the endpoint's own, in memory (never stored)."""


@dataclass(frozen=True, slots=True)
class Scope:
    """What a condition of `endpoint` may name; see the module's docstring."""

    endpoint: str
    reads_own: bool
    schemas: Mapping[str, ShapeNode | None] = field(default_factory=dict)

    def others(self) -> list[str]:
        return [name for name in self.schemas if name != self.endpoint]

    def variables(self) -> frozenset[str]:
        names = {name for name in self.others() if addressable(name)}
        return frozenset(names | set(OWN)) if self.reads_own else frozenset(names)

    def schema(self, name: str) -> ShapeNode | None:
        """The learnt body schema of `name`, None when nothing was learnt."""
        found = self.schemas.get(name)
        return found if found is not None and found.seen else None


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a condition said of some responses."""

    holds: bool
    """True only when it evaluated to true."""
    error: str | None = None
    """Why it could not be evaluated (then `holds` is False)."""
    reads: tuple[tuple[str, str], ...] = ()
    """The values it read (`fetch.body.records`, `0`), given when it does not hold."""

    def describe(self) -> str:
        """`true`, `false (fetch.body.records = 0)` or `error: …`."""
        if self.error is not None:
            return f"error: {self.error}"
        if self.holds:
            return "true"
        shown = ", ".join(f"{path} = {value}" for path, value in self.reads)
        return f"false ({shown})" if shown else "false"

    def explain(self, label: str) -> str:
        """`run_if 'x > 0' is false (x = 0)`, `… could not be evaluated: …`, `… is true`
        for the condition `label` names."""
        if self.error is not None:
            return f"{label} could not be evaluated: {self.error}"
        return f"{label} is {self.describe()}"


Tree = Mapping[str, "Tree | None"]
"""The keys a condition reads of a document, nested; None where it reads the value whole."""


@dataclass(frozen=True, slots=True)
class Condition:
    """A compiled condition; see the module's docstring."""

    text: str
    program: Any
    refs: tuple[Reference, ...]
    roots: frozenset[str]
    trees: Mapping[str, Tree | None]
    """Per variable, the keys read: a CEL evaluation converts what it is given whole (a
    100 KB body costs 1.5 ms), so it is given only those."""

    def evaluate(self, own: Response | None, others: Mapping[str, Response]) -> Verdict:
        data: dict[str, JSON] = {}
        for root, tree in self.trees.items():
            if own is not None and root in OWN:
                value = getattr(own, root)
            elif root in others:
                response = others[root]
                value = {
                    "body": response.body,
                    "status": response.status,
                    "duration_ms": response.duration_ms,
                }
            else:
                return Verdict(False, f"no response of {root!r} to read")
            data[root] = _cut(value, tree)
        try:
            value = self.program.eval(data=data)
        except RuntimeError as error:
            # A value CEL cannot hold (an integer past 64 bits) is refused before evaluation.
            return Verdict(False, _without_code(str(error)), self._reads(data))
        result = value.value()
        if result is True:
            return Verdict(True)
        if result is False:
            return Verdict(False, reads=self._reads(data))
        if value.type() == cel.Type.ERROR:
            return Verdict(False, _without_code(str(result)), self._reads(data))
        shown = excerpt(json.dumps(value.plain_value(), default=str), 60)
        return Verdict(False, f"{shown} is neither true nor false")

    def _reads(self, data: Mapping[str, JSON]) -> tuple[tuple[str, str], ...]:
        shown: dict[str, str] = {}
        for ref in self.refs:
            value = follow(data[ref.root], ref.path)
            text = "absent" if value is MISSING else excerpt(json.dumps(value), 60)
            shown[canonical((ref.root, *ref.path))] = text
        return tuple(shown.items())


def _tree(paths: list[FieldPath]) -> Tree | None:
    """The keys `paths` go through (up to a list position or their end)."""
    if not all(path and isinstance(path[0], str) for path in paths):
        return None
    heads: dict[str, list[FieldPath]] = {}
    for path in paths:
        heads.setdefault(str(path[0]), []).append(path[1:])
    return {key: _tree(rest) for key, rest in heads.items()}


def _cut(document: JSON, tree: Tree | None) -> JSON:
    """`document` with only the keys of `tree`."""
    if tree is None or not isinstance(document, dict):
        return document
    return {key: _cut(document[key], below) for key, below in tree.items() if key in document}


def _without_code(message: str) -> str:
    """CEL's message without its status code (`NOT_FOUND: …`)."""
    return re.sub(r"^[A-Z_]+: ", "", message)


class _NumbersMixed(Exception):
    """The checker's only complaints were about kinds of number mixed (`int * double`)."""


def _compile(
    env: Any, text: str, *, disable_check: bool = False, numbers_typed: bool = False
) -> Any:
    """Raises `ConditionError` for the first error CEL reports; with `numbers_typed`, errors
    that only mix kinds of number are no errors, and `_NumbersMixed` when no other is left."""
    try:
        return env.compile(text, disable_check=disable_check)
    except RuntimeError as error:
        found = [
            ConditionError(
                match.group(3).split(" expecting ")[0].replace(" (in container '')", ""),
                int(match.group(1)),
                int(match.group(2)),
            )
            for match in _CEL_ERROR.finditer(str(error))
        ]
        if not found:
            raise ConditionError(_without_code(str(error))) from None
        if numbers_typed:
            found = [e for e in found if not _mixes_numbers(e.reason)]
            if not found:
                raise _NumbersMixed from None
        raise found[0] from None


_OVERLOAD = re.compile(r"found no matching overload for '([^']+)' applied to '\((.*)\)'")
_NUMBER_KINDS = re.compile(r"\b(?:u?int|double)\b")


def _mixes_numbers(reason: str) -> bool:
    """Whether CEL's `reason` refuses arguments that differ only in their kinds of number:
    `(int, double)`, or `double in list(int)`."""
    found = _OVERLOAD.fullmatch(reason)
    if found is None:
        return False
    arguments = _arguments(found.group(2))
    plain = [_NUMBER_KINDS.sub("number", argument) for argument in arguments]
    if plain == arguments:
        return False
    if found.group(1) == "@in" and len(plain) == 2:
        return plain[1] == f"list({plain[0]})" or plain[1].startswith(f"map({plain[0]},")
    return len(set(plain)) == 1


def _arguments(listed: str) -> list[str]:
    """`int, map(string, dyn)` → `["int", "map(string, dyn)"]`."""
    arguments, depth, start = [], 0, 0
    for at, char in enumerate(listed):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            arguments.append(listed[start:at].strip())
            start = at + 1
    return [*arguments, listed[start:].strip()]


@lru_cache(maxsize=1024)
def condition(text: str) -> Condition:
    """The compiled program of `text`, checked before (module docstring)."""
    code = blank_strings(text)
    check_limits(text, code)
    free = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", code)) - RESERVED - TYPE_NAMES
    refs = tuple(references(code, frozenset(free)))
    program = _compile(_RUNTIME, text, disable_check=True)
    roots = frozenset(ref.root for ref in refs)
    trees = {root: _tree([ref.path for ref in refs if ref.root == root]) for root in roots}
    return Condition(text, program, refs, roots, trees)


def check_condition(text: str, scope: Scope) -> Condition:
    """`text` checked against `scope` and compiled; raises `ConditionError`."""
    code = blank_strings(text)
    check_limits(text, code)
    for name in scope.others():
        at = None if addressable(name) else name_in(code, name)
        if at is not None:
            fixed = re.sub(r"\W", "_", name)
            raise error_at(
                text,
                at,
                f"endpoint {name!r} cannot be named in a condition: a condition names "
                f"endpoints of letters, digits and _ (rename it, e.g. {fixed!r})",
            )
    variables = scope.variables()
    try:
        loose = _checked_type(text, code, variables, scope, numbers_typed=False)
    except ConditionError as error:
        if not error.reason.startswith("undeclared reference"):
            raise
        known = ", ".join(sorted(name for name in variables if name not in OWN))
        offered = "its own body, status, duration_ms, headers and " if scope.reads_own else ""
        error.reason += f": a condition here reads {offered}the endpoints {known or '(none)'}"
        raise ConditionError(error.reason, error.line, error.column) from None
    try:
        result = _checked_type(text, code, variables, scope, numbers_typed=True)
    except _NumbersMixed:
        result = loose
    if result not in (cel.Type.BOOL, cel.Type.DYN):
        raise ConditionError(
            f"a condition must be true or false, and this one is {result.name().lower()}"
        )
    return condition(text)


def _checked_type(
    text: str, code: str, variables: frozenset[str], scope: Scope, *, numbers_typed: bool
) -> Any:
    """The CEL type of `text` with every path into a response of its learnt type (numbers
    `dyn` unless `numbers_typed`); raises as `_compile`."""
    declared: dict[str, Any] = dict.fromkeys(variables, _OBJECT)
    if scope.reads_own:
        declared |= _OWN_TYPES
        declared["body"] = _shape_type(scope.schema(scope.endpoint), (), numbers_typed)
    checked = text
    # Each path into a response becomes one variable of its learnt type, as long as the path
    # (so that CEL's positions stay right): CEL has no type for "an object with these keys".
    paths = _typed_paths(text, code, variables, scope, numbers_typed)
    for number, (start, end, kind) in enumerate(paths):
        alias = f"_{number}".ljust(end - start, "_")
        declared[alias] = kind
        checked = checked[:start] + alias + checked[end:]
    env = cel.NewEnv(variables=declared)
    return _compile(env, checked, numbers_typed=numbers_typed).return_type()


def _typed_paths(
    text: str, code: str, variables: frozenset[str], scope: Scope, numbers_typed: bool
) -> list[tuple[int, int, Any]]:
    """Where each path into a body stands (start, end) and its learnt type; raises
    `ConditionError` for a field the endpoint's responses never had."""
    typed: list[tuple[int, int, Any]] = []
    found = references(code, variables)
    # `has(x.y)` asks whether y is there: y need not be known, there or elsewhere.
    probed = {(ref.root, ref.path) for ref in found if ref.probed}
    for ref in found:
        path = ref.path[:-1] if ref.probed else ref.path
        checked = min(
            (len(p) - 1 for root, p in probed if root == ref.root and ref.path[: len(p)] == p),
            default=len(path),
        )
        if scope.reads_own and ref.root in OWN:
            if ref.root != "body" or not path:
                continue
            owner, skip = scope.endpoint, 0
        else:
            if not path:
                continue
            if path[0] not in PARTS:
                parts = ", ".join(PARTS)
                reason = f"{ref.root!r} has no {path[0]!r}: a condition reads its {parts}"
                raise error_at(text, ref.start, reason)
            if path[0] != "body":
                typed.append((ref.start, ref.steps_end[0], _OWN_TYPES[str(path[0])]))
                continue
            owner, skip = ref.root, 1
        schema = scope.schema(owner)
        unseen = None if schema is None else unseen_field(schema, path[skip:checked])
        if unseen is not None:
            depth = len(parse_field_path(unseen.at)) if unseen.at else 0
            raise error_at(text, ref.step_at(code, skip + depth), unseen.phrase(owner))
        kind = _shape_type(schema, path[skip:], numbers_typed)
        typed.append((ref.start, ref.steps_end[len(path) - 1], kind))
    return typed


def _shape_type(schema: ShapeNode | None, path: FieldPath, numbers_typed: bool) -> Any:
    """The CEL type of what `schema` learnt at `path`: dyn where it cannot say (and for
    numbers, unless `numbers_typed`)."""
    node = schema
    for depth, step in enumerate(path):
        if node is None or depth >= MAX_DEPTH:
            return cel.Type.DYN
        node = node.items if isinstance(step, int) else node.properties.get(str(step))
    if node is None:
        return cel.Type.DYN
    kinds = {kind for kind, count in node.types.items() if count}
    if kinds == {"string"}:
        return cel.Type.STRING
    if kinds == {"boolean"}:
        return cel.Type.BOOL
    if kinds == {"object"}:
        return _OBJECT
    if kinds == {"array"}:
        return cel.Type.List(_shape_type(node.items, (), numbers_typed))
    if numbers_typed and kinds == {"integer"}:
        return cel.Type.INT
    if numbers_typed and kinds and kinds <= {"integer", "number"}:
        return cel.Type.DOUBLE
    return cel.Type.DYN
