"""What applying declarations would change (`apply --dry-run`): per job and endpoint, whether it
would be created, updated or left as it is, and for an update each field that changes, old and
new. Pure: the caller reads the stored jobs and endpoints; an endpoint is updated exactly when
its spec differs, as every store's `apply` decides."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass
from datetime import date
from enum import Enum, StrEnum

from cronpilot.domain.model import JOB_DECLARED, JSON, EndpointSpec, Job
from cronpilot.domain.ports.catalog import JobDeclaration


class Outcome(StrEnum):
    CREATE = "create"
    UPDATE = "update"
    UNCHANGED = "unchanged"
    LEFT_ALONE = "left alone"
    """Stored under a declared job, missing from the declarations: `apply` leaves it be."""


class FieldOutcome(StrEnum):
    ADDED = "added"
    REMOVED = "removed"
    CHANGED = "changed"


@dataclass(frozen=True, slots=True)
class FieldChange:
    path: str
    """`schedule.interval_seconds`, `headers.Authorization`, `body.max_orders`,
    `rules[0].when`."""
    outcome: FieldOutcome
    old: JSON = None
    new: JSON = None


@dataclass(frozen=True, slots=True)
class DeclarationChange:
    ref: str
    """`job` or `job/endpoint`."""
    outcome: Outcome
    fields: tuple[FieldChange, ...] = ()


def planned_changes(
    declarations: Sequence[JobDeclaration],
    stored_jobs: Mapping[str, Job],
    stored_specs: Mapping[str, EndpointSpec],
) -> list[DeclarationChange]:
    """Each declared job, then its endpoints, then the stored endpoints of that job that are
    not declared. `stored_specs` maps `job/endpoint` to what is stored."""
    changes = []
    for declaration in declarations:
        job = declaration.job
        stored_job = stored_jobs.get(job.name)
        if stored_job is None:
            changes.append(DeclarationChange(job.name, Outcome.CREATE))
        else:
            old = {name: getattr(stored_job, name) for name in JOB_DECLARED}
            new = {name: getattr(job, name) for name in JOB_DECLARED}
            changes.append(_compared(job.name, old, new))
        declared = set()
        for spec in declaration.endpoints:
            ref = f"{job.name}/{spec.name}"
            declared.add(ref)
            stored = stored_specs.get(ref)
            if stored is None:
                changes.append(DeclarationChange(ref, Outcome.CREATE))
            else:
                changes.append(_compared(ref, stored, spec))
        prefix = f"{job.name}/"
        changes.extend(
            DeclarationChange(ref, Outcome.LEFT_ALONE)
            for ref in sorted(stored_specs)
            if ref.startswith(prefix) and ref not in declared
        )
    return changes


def _compared(ref: str, old: object, new: object) -> DeclarationChange:
    before, after = dict(_leaves(old, "")), dict(_leaves(new, ""))
    found = []
    for path in sorted(before.keys() | after.keys()):
        if path not in after:
            found.append(FieldChange(path, FieldOutcome.REMOVED, old=before[path]))
        elif path not in before:
            found.append(FieldChange(path, FieldOutcome.ADDED, new=after[path]))
        elif before[path] != after[path]:
            found.append(FieldChange(path, FieldOutcome.CHANGED, before[path], after[path]))
    outcome = Outcome.UPDATE if found else Outcome.UNCHANGED
    return DeclarationChange(ref, outcome, tuple(found))


def _leaves(value: object, path: str) -> Iterator[tuple[str, JSON]]:
    """`value` flattened to (dotted path, plain value): dataclasses and mappings are opened,
    anything else is a leaf; a None that a path ends on is no value at all, so that a field
    going from unset to set reads as added."""
    if is_dataclass(value) and not isinstance(value, type):
        for item in fields(value):
            yield from _leaves(getattr(value, item.name), _join(path, item.name))
    elif isinstance(value, Mapping):
        if not value:
            return
        for key, item in value.items():
            yield from _leaves(item, _join(path, str(key)))
    elif isinstance(value, tuple) and any(is_dataclass(item) for item in value):
        # Rules: `rules[0].when`, so that changing one rule names it.
        for i, item in enumerate(value):
            yield from _leaves(item, f"{path}[{i}]")
    elif value is not None:
        yield path, _plain(value)


def _plain(value: object) -> JSON:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, date):
        # Quiet windows' dates, as a jobs file writes them.
        return value.isoformat()
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    return value


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name
