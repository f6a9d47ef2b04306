"""Reading a jobs file: its size and encoding, YAML (1.2 booleans, no timestamps, no duplicate
keys), references (`${NAME}`, `${env:NAME}`, `${file:PATH}`) expanded within bounds, then the
schema and the checks."""

from __future__ import annotations

import itertools
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from cronpilot.adapters.jobs_file.checks import declarations
from cronpilot.adapters.jobs_file.locations import Issue, Loc, where
from cronpilot.adapters.jobs_file.references import expand, remembered, with_references
from cronpilot.adapters.jobs_file.schema import validated
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.model import (
    DEFAULT_FLOOR_SECONDS,
)
from cronpilot.domain.ports import JobDeclaration
from cronpilot.domain.runs.excerpt import excerpt

_MAX_DEPTH = 64
_MAX_VALUES = 100_000
"""Bounds on a document, so that nested YAML aliases cannot expand into billions of values."""
MAX_FILE_BYTES = 10 * 1000**2
"""A jobs file is read up to this size and refused beyond: `-f /dev/zero` must not fill memory."""


class _Loader(yaml.SafeLoader):
    """YAML with YAML 1.2 booleans (`planner_mode: off` stays the string "off") and without
    timestamps (`since: 2024-01-01` in a body stays a string, as JSON has no dates), that
    refuses duplicate keys instead of silently keeping the last one."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[str] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str):
                continue
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {excerpt(repr(key))}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        try:
            return super().construct_yaml_int(node)
        except ValueError as exc:
            # Python converts at most so many decimal digits (conversion is quadratic).
            limit = sys.get_int_max_str_digits()
            raise yaml.constructor.ConstructorError(
                None, None, f"an integer of more than {limit:,} digits", node.start_mark
            ) from exc


_NOT_RESOLVED = frozenset({"tag:yaml.org,2002:bool", "tag:yaml.org,2002:timestamp"})
_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in _NOT_RESOLVED]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)


def example_jobs_file() -> Path:
    """The bundled example used by the demo and the docs."""
    return Path(__file__).parent.with_name("examples") / "jobs.yaml"


def load_declarations(
    path: Path,
    allowed_networks: Sequence[str],
    env: Mapping[str, str] | None = None,
    floor_seconds: float = DEFAULT_FLOOR_SECONDS,
) -> list[JobDeclaration]:
    """Read and validate `path`; raises `InvalidConfig` with one line naming the problem."""
    try:
        # One byte past the limit tells a file that is too large from one that just fits,
        # without reading an endless one (a device, a pipe) to its end.
        with path.open("rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise InvalidConfig(str(path), f"cannot read: {exc.strerror or exc}") from exc
    if len(data) > MAX_FILE_BYTES:
        raise InvalidConfig(str(path), f"larger than {MAX_FILE_BYTES:,} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidConfig(str(path), f"cannot read: {exc}") from exc
    return parse_declarations(
        text, str(path), allowed_networks, env, floor_seconds, read_files=True
    )


def parse_declarations(
    text: str,
    source: str,
    allowed_networks: Sequence[str],
    env: Mapping[str, str] | None = None,
    floor_seconds: float = DEFAULT_FLOOR_SECONDS,
    *,
    read_files: bool = False,
) -> list[JobDeclaration]:
    """Validate a jobs document named `source` (for messages); `env` defaults to os.environ.
    Every endpoint is checked against, and stamped with, the floor (`FLOOR_VARIABLE`).
    `${file:…}` is read only with `read_files` (a file of this machine's, `load_declarations`),
    never for a document sent to the server."""
    raw = _read_yaml(text, source)
    try:
        written: dict[Loc, str] = {}
        expanded = _expand(raw, os.environ if env is None else env, written, read_files)
        document = validated(expanded)
        made = declarations(document, allowed_networks, floor_seconds)
        return with_references(made, document, written)
    except Issue as issue:
        raise InvalidConfig(where(source, issue.loc, raw), issue.reason) from issue.__cause__


def _read_yaml(text: str, source: str) -> object:
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        place = f"{source}:{mark.line + 1}" if mark is not None else source
        raise InvalidConfig(place, f"YAML syntax error: {exc.problem or exc.context}") from exc
    except yaml.YAMLError as exc:
        raise InvalidConfig(source, f"YAML syntax error: {exc}") from exc
    except RecursionError as exc:
        raise InvalidConfig(source, "nested too deeply") from exc


def _expand(
    raw: object, env: Mapping[str, str], written: dict[Loc, str], read_files: bool
) -> object:
    """`raw` with references replaced in every string (`references.expand`), each string that
    export writes back kept in `written` by its location. The result is a fresh tree: values
    that YAML aliases share (or that an alias makes cyclic) are copied and counted, within
    bounds."""
    counter = itertools.count(1)

    def walk(value: object, loc: Loc) -> object:
        if next(counter) > _MAX_VALUES:
            raise Issue((), f"more than {_MAX_VALUES} values (nested YAML aliases?)")
        if len(loc) > _MAX_DEPTH:
            raise Issue(loc[:6], f"nested more than {_MAX_DEPTH} levels deep")
        if isinstance(value, str):
            if remembered(value):
                written[loc] = value
            return expand(value, env, loc, read_files=read_files)
        if isinstance(value, dict):
            return {key: walk(item, (*loc, key)) for key, item in value.items()}
        if isinstance(value, list):
            return [walk(item, (*loc, i)) for i, item in enumerate(value)]
        return value

    return walk(raw, ())
