"""References in a jobs file's strings: `${NAME}` and `${env:NAME}` (an environment variable),
`${file:PATH}` (a file's text, as Docker and Kubernetes deliver secrets). All are read at
apply; `${env:…}` and `${file:…}` are also remembered where they stood (`Reference`), so that
`cronpilot export` writes them back and never the value they gave."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from cronpilot.adapters.jobs_file.locations import Issue, Loc
from cronpilot.adapters.jobs_file.schema import ConfigDocument
from cronpilot.adapters.secret_files import SecretFileError, read_secret_file
from cronpilot.domain.model import Reference
from cronpilot.domain.ports import JobDeclaration
from cronpilot.domain.runs.excerpt import excerpt

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_REFERENCE = re.compile(rf"\$\{{(?:(?P<kind>[a-z]+):(?P<argument>[^}}]*)|(?P<name>{_NAME}))\}}")
_VARIABLE = re.compile(_NAME)
_KINDS = ("env", "file")


def expand(value: str, env: Mapping[str, str], loc: Loc, *, read_files: bool) -> str:
    """`value` with each reference replaced by what it names; raises `Issue` for an unset
    variable, a file that cannot be read (or any file, unless `read_files`), or an unknown
    kind."""
    return _REFERENCE.sub(lambda found: _resolved(found, env, loc, read_files), value)


def remembered(value: str) -> bool:
    """Whether `value`, as written, holds a reference that export writes back."""
    return any(found["kind"] in _KINDS for found in _REFERENCE.finditer(value))


def _resolved(found: re.Match[str], env: Mapping[str, str], loc: Loc, read_files: bool) -> str:
    kind, argument = found["kind"], found["argument"]
    if kind is None:
        return _variable(found["name"], env, loc)
    if kind == "env":
        if not _VARIABLE.fullmatch(argument):
            raise Issue(loc, f"{excerpt(repr(argument))} is not an environment variable name")
        return _variable(argument, env, loc)
    if kind == "file":
        if not read_files:
            # A document sent to the server (API, MCP) must not read the server's files.
            raise Issue(loc, "${file:…} is read only by `cronpilot apply -f`, on its machine")
        try:
            return read_secret_file(argument)
        except SecretFileError as exc:
            raise Issue(loc, str(exc)) from None
    raise Issue(
        loc, f"unknown reference ${{{excerpt(kind)}:…}}; use ${{env:NAME}} or ${{file:PATH}}"
    )


def _variable(name: str, env: Mapping[str, str], loc: Loc) -> str:
    if name not in env:
        raise Issue(loc, f"environment variable {excerpt(name)} is not set")
    return env[name]


def with_references(
    declarations: Sequence[JobDeclaration], document: ConfigDocument, written: Mapping[Loc, str]
) -> list[JobDeclaration]:
    """`declarations` with the references each endpoint's values came from. A job's `notify`
    belongs to each endpoint that takes that part of it (`urls`, `targets`) from the job."""
    if not written:
        return list(declarations)
    made = []
    for j, (declaration, job) in enumerate(zip(declarations, document.jobs, strict=True)):
        specs = []
        pairs = zip(declaration.endpoints, job.endpoints, strict=True)
        for e, (spec, endpoint) in enumerate(pairs):
            own = endpoint.notify
            inherited = [
                part for part in ("urls", "targets") if own is None or getattr(own, part) is None
            ]
            references = [
                Reference(loc[4:], text)
                for loc, text in written.items()
                if loc[:4] == ("jobs", j, "endpoints", e)
            ] + [
                Reference(loc[2:], text)
                for loc, text in written.items()
                if loc[:3] == ("jobs", j, "notify") and len(loc) > 3 and loc[3] in inherited
            ]
            specs.append(replace(spec, references=tuple(references)))
        made.append(replace(declaration, endpoints=specs))
    return made
