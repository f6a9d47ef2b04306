"""Reading a condition's text before CEL does: the field paths it names (with where they are),
what it costs, and what it may not use. `domain.rules.conditions` checks and runs conditions with
what this module finds; it needs no CEL parser of its own, only the lexical facts below.

A path is a variable followed by keys and literal list positions (`fetch.body.rows[0].id`),
written the one way of `domain.graph.field_paths`; a method call ends it (`body.name.size()` names
`body.name`). String literals are blanked first, so `"body.x"` names nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cronpilot.domain.graph.field_paths import FieldPath, Step

MAX_LENGTH = 1000
"""Characters of a condition."""
MAX_COST = 100
"""Operands and operators of a condition. With the comprehension macros refused nothing in
CEL loops, so each is evaluated at most once: this bounds the work of an evaluation."""
MACROS = ("all", "exists", "exists_one", "map", "filter")
"""CEL's comprehensions: a loop over a list per call, nested at will, which no cost limit of
the CEL library used here can bound (it has none); refused."""
TYPE_NAMES = frozenset(
    ["bool", "bytes", "double", "dyn", "int", "list", "map", "null_type", "string", "type", "uint"]
)
"""CEL's type names, which an expression may use as values (`type(x) == int`)."""
RESERVED = frozenset(
    [
        "as",
        "break",
        "const",
        "continue",
        "else",
        "false",
        "for",
        "function",
        "if",
        "import",
        "in",
        "let",
        "loop",
        "namespace",
        "null",
        "package",
        "return",
        "true",
        "var",
        "void",
        "while",
    ]
)
"""Words CEL's grammar keeps: an endpoint so named cannot be a condition's variable."""

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_STRING = re.compile(
    r"""[rRbB]{0,2}(?:'''(?:\\.|[^\\])*?'''|\"\"\"(?:\\.|[^\\])*?\"\"\"|'(?:\\.|[^'\\\n])*'"""
    r"""|"(?:\\.|[^"\\\n])*")""",
    re.DOTALL,
)
_CHAIN = re.compile(
    r"(?<![\w.])([A-Za-z_][A-Za-z0-9_]*)((?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*|\s*\[\s*\d+\s*\])*)"
)
_STEP = re.compile(r"\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)|\s*\[\s*(\d+)\s*\]")
_TOKEN = re.compile(r'"[^"]*"|[A-Za-z_][A-Za-z0-9_]*|\d[\w.]*|&&|\|\||[=!<>]=|[-+*/%<>!?:.\[(]')
_MACRO = re.compile(rf"\.\s*({'|'.join(MACROS)})\s*\(")
_HAS = re.compile(r"has\s*\(\s*$")


class ConditionError(ValueError):
    """A condition that cannot be used; `column` (1-based, on `line`) points into its text."""

    def __init__(self, reason: str, line: int = 1, column: int = 1) -> None:
        where = f"line {line} column {column}" if line > 1 else f"column {column}"
        super().__init__(f"at {where}: {reason}")
        self.reason = reason
        self.line = line
        self.column = column


def error_at(text: str, offset: int, reason: str) -> ConditionError:
    """A `ConditionError` at character `offset` of `text`."""
    line = text.count("\n", 0, offset) + 1
    return ConditionError(reason, line, offset - (text.rfind("\n", 0, offset) + 1) + 1)


@dataclass(frozen=True, slots=True)
class Reference:
    """One path a condition names."""

    root: str
    """The variable: `body`, `status`, `duration_ms`, `headers` or an endpoint's name."""
    path: FieldPath
    """The steps after it; empty for the bare variable."""
    start: int
    """Where it begins in the text (offset)."""
    probed: bool
    """Inside `has(…)`: its last step may be absent, that is the question."""
    steps_end: tuple[int, ...]
    """Where each step ends (offsets), so that a prefix of the path has a span too."""

    def step_at(self, code: str, number: int) -> int:
        """Where step `number` of the path names its key or position (offset)."""
        after = self.steps_end[number - 1] if number else self.start + len(self.root)
        return after + len(code[after:]) - len(code[after:].lstrip(" \t\n.["))


def blank_strings(text: str) -> str:
    """`text` with every string literal made `"  "` (its length kept): what is left is code."""
    return _STRING.sub(lambda m: '"' + " " * (len(m.group(0)) - 2) + '"', text)


def references(code: str, variables: frozenset[str]) -> list[Reference]:
    """Every path in `code` (strings blanked) whose root is one of `variables`."""
    found: list[Reference] = []
    for match in _CHAIN.finditer(code):
        root = match.group(1)
        if root not in variables:
            continue
        steps: list[Step] = []
        ends: list[int] = []
        for step in _STEP.finditer(match.group(2)):
            key, index = step.groups()
            steps.append(key if key is not None else int(index))
            ends.append(match.start(2) + step.end())
        if code[match.end() :].lstrip().startswith("("):
            if not steps or isinstance(steps[-1], int):
                continue
            # A method call (`name.size()`) ends the path before it.
            steps.pop()
            ends.pop()
        probed = _HAS.search(code, 0, match.start()) is not None and bool(steps)
        found.append(Reference(root, tuple(steps), match.start(), probed, tuple(ends)))
    return found


def check_limits(text: str, code: str) -> None:
    """Raises `ConditionError` for a text over the size or cost limit or using a
    comprehension macro."""
    if not text.strip():
        raise ConditionError("empty condition")
    if len(text) > MAX_LENGTH:
        raise error_at(
            text, MAX_LENGTH, f"{len(text):,} characters, over the limit of {MAX_LENGTH:,}"
        )
    macro = _MACRO.search(code)
    if macro is not None:
        raise error_at(
            text,
            macro.start(1),
            f"{macro.group(1)}() is not allowed: a condition may not loop over a list "
            f"({', '.join(MACROS)} are refused)",
        )
    tokens = list(_TOKEN.finditer(code))
    if len(tokens) > MAX_COST:
        raise error_at(
            text,
            tokens[MAX_COST].start(),
            f"{len(tokens)} operands and operators, over the cost limit of {MAX_COST}",
        )


def name_in(code: str, name: str) -> int | None:
    """Where `name` (an endpoint's, not a CEL identifier) stands as a word in `code`, if it
    does."""
    match = re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", code)
    return None if match is None else match.start()


def addressable(name: str) -> bool:
    """Whether a condition can name endpoint `name` as a variable."""
    return IDENTIFIER.fullmatch(name) is not None and name not in RESERVED
