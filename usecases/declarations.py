"""Applying declarations (a jobs file) with what the store has learnt: templates and conditions
(`run_if`, `success_when`) are checked against the learnt output schemas, the jobs and
endpoints written, and the config's edges (a job contains its endpoints, an upstream feeds its
dependants) and the provides edges the new inputs allow put into the tool graph: all of it one
unit of work."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from cronpilot.domain.access.audit import audit_entry
from cronpilot.domain.declaration_diff import DeclarationChange, planned_changes
from cronpilot.domain.declaring import applied
from cronpilot.domain.errors import (
    EndpointNotFound,
    InvalidConfig,
    JobNotFound,
    PreconditionFailed,
)
from cronpilot.domain.graph.field_paths import unseen_field
from cronpilot.domain.graph.graph import EdgeType, declared_sightings
from cronpilot.domain.graph.schema_inference import ShapeNode
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.model import EndpointSpec, Job
from cronpilot.domain.ports import (
    ApplyReport,
    CatalogRepository,
    JobDeclaration,
    ReadingFactory,
    Repositories,
    UnitOfWorkFactory,
    Waker,
)
from cronpilot.domain.rules.conditions import ConditionError, Scope, check_condition
from cronpilot.domain.runs.templates import input_fields
from cronpilot.domain.versions import declarations_version
from cronpilot.usecases.graph_edges import refresh_provides
from cronpilot.usecases.rule_checks import check_rules

log = logging.getLogger(__name__)


async def apply_declarations(
    uow: UnitOfWorkFactory,
    waker: Waker | None,
    declarations: Sequence[JobDeclaration],
    source: str,
    *,
    actor: str,
    now: datetime,
    if_version: str | None = None,
) -> ApplyReport:
    """Check, then apply all or nothing, and wake the schedulers when something was created
    or changed; a change is audited for `actor` (an apply that changes nothing is not).
    Raises `PreconditionFailed` when `if_version` is given and the stored declarations of the
    declared jobs are no longer at that version (`Preview.version`).
    Raises `InvalidConfig` naming file (`source`), job, endpoint and field when a
    template asks an upstream for a field its responses never had, or a condition (a rule's
    included) does not compile or type-check against the learnt schemas (with its position).
    Dependency edges a file no longer declares leave the graph, unless runs showed them
    (history stays)."""
    async with uow() as tx:
        if if_version is not None and if_version != await _version(tx, declarations):
            raise PreconditionFailed(", ".join(d.job.name for d in declarations))
        await check_templates(tx, declarations, source)
        await check_conditions(tx, declarations, source)
        await check_rules(tx, declarations, source)
        report = await apply_to_catalog(tx.catalog, declarations, now)
        sightings = [
            sighting
            for declaration in declarations
            for sighting in declared_sightings(
                declaration.job.name,
                {spec.name: spec.depends_on for spec in declaration.endpoints},
            )
        ]
        await tx.graph.record(sightings, now)
        declared = {f"{d.job.name}/{spec.name}" for d in declarations for spec in d.endpoints}
        await tx.graph.retract(EdgeType.DEPENDENCY, declared, {s.key for s in sightings})
        # Changed requests change what the learnt outputs can feed.
        for job in sorted({d.job.name for d in declarations}):
            await refresh_provides(tx, job, now)
        changed = report.created + report.updated
        if changed:
            summary = f"{len(report.created)} created, {len(report.updated)} updated"
            detail = f"{summary}: {', '.join(changed)}"
            await tx.access.record(audit_entry(actor, "apply", source, detail, now))
        await tx.commit()
    if waker is not None and (report.created or report.updated):
        await waker.notify()
    return report


async def apply_to_catalog(
    catalog: CatalogRepository, declarations: Sequence[JobDeclaration], now: datetime
) -> ApplyReport:
    """The jobs and endpoints of `declarations` written: the stored ones read (held until the
    unit of work ends), what changes decided (`domain.declaring.applied`), the decision
    written at once. No check: `apply_declarations` checks first."""
    stored = await catalog.declared_jobs([d.job.name for d in declarations])
    decided = applied(declarations, stored, now)
    await catalog.save_applied(decided)
    report = decided.report
    log.info(
        "applied declarations",
        extra=log_extra(
            "apply",
            created_count=len(report.created),
            updated_count=len(report.updated),
            absent_count=len(report.absent),
        ),
    )
    return report


@dataclass(frozen=True, slots=True)
class Preview:
    changes: list[DeclarationChange]
    version: str
    """What is stored of the declared jobs, as `domain.versions.declarations_version` digests
    it: `apply_declarations(if_version=…)` applies only while it is still so."""


async def preview_declarations(
    reading: ReadingFactory, declarations: Sequence[JobDeclaration], source: str
) -> Preview:
    """What `apply_declarations` would change, writing nothing: the same checks (raises as it
    does), then each job and endpoint compared with what is stored, in one snapshot."""
    async with reading() as tx:
        await check_templates(tx, declarations, source)
        await check_conditions(tx, declarations, source)
        await check_rules(tx, declarations, source)
        stored_jobs, stored_specs = await _stored(tx, declarations)
    return Preview(
        planned_changes(declarations, stored_jobs, stored_specs),
        declarations_version((d.job.name for d in declarations), stored_jobs, stored_specs),
    )


async def _stored(
    repositories: Repositories, declarations: Sequence[JobDeclaration]
) -> tuple[dict[str, Job], dict[str, EndpointSpec]]:
    """The declared jobs that are stored, by name, and their endpoints' specs by ref."""
    stored_jobs: dict[str, Job] = {}
    stored_specs: dict[str, EndpointSpec] = {}
    for declaration in declarations:
        name = declaration.job.name
        try:
            stored_jobs[name] = await repositories.catalog.get_job(name)
        except JobNotFound:
            continue
        for endpoint in await repositories.catalog.list_endpoints(name):
            stored_specs[endpoint.ref] = endpoint.spec
    return stored_jobs, stored_specs


async def _version(repositories: Repositories, declarations: Sequence[JobDeclaration]) -> str:
    stored_jobs, stored_specs = await _stored(repositories, declarations)
    return declarations_version((d.job.name for d in declarations), stored_jobs, stored_specs)


async def export_declarations(
    reading: ReadingFactory, job: str | None = None
) -> list[JobDeclaration]:
    """The stored jobs (or the one named: raises `JobNotFound`) with their endpoints' specs, as
    declarations that `apply_declarations` would leave unchanged; one snapshot."""
    async with reading() as tx:
        jobs = [await tx.catalog.get_job(job)] if job is not None else await tx.catalog.list_jobs()
        limits = {status.state.key: status.state.limit for status in await tx.catalog.limits()}
        declarations = []
        for each in jobs:
            specs = [e.spec for e in await tx.catalog.list_endpoints(each.name)]
            named = sorted({spec.limit for spec in specs if spec.limit is not None})
            declarations.append(JobDeclaration(each, specs, [limits[key] for key in named]))
        return declarations


async def check_templates(
    repositories: Repositories, declarations: Sequence[JobDeclaration], source: str
) -> None:
    """An upstream not stored yet, or without a body so far, cannot be checked: it passes."""
    for declaration in declarations:
        job = declaration.job.name
        for spec in declaration.endpoints:
            for item in input_fields(spec):
                placeholder = item.placeholder
                if placeholder is None:
                    continue
                try:
                    upstream = await repositories.catalog.get_endpoint(
                        f"{job}/{placeholder.upstream}"
                    )
                except EndpointNotFound:
                    continue
                schema = await repositories.schemas.get_output_schema(upstream.id)
                if schema is None or not schema.observations:
                    continue
                unseen = unseen_field(schema.root, placeholder.path)
                if unseen is not None:
                    where = f"{source}: job {job!r} endpoint {spec.name!r} field {item.where!r}"
                    raise InvalidConfig(
                        where, f"template {placeholder}: {unseen.phrase(placeholder.upstream)}"
                    )


async def check_conditions(
    repositories: Repositories, declarations: Sequence[JobDeclaration], source: str
) -> None:
    """`success_when` reads the endpoint's own response, `run_if` its parents'; each is
    checked against the schemas learnt so far (none for an endpoint not stored yet)."""
    for declaration in declarations:
        job = declaration.job.name
        for spec in declaration.endpoints:
            uses: list[tuple[str, str | None, bool, tuple[str, ...]]] = [
                ("success_when", spec.success_when, True, (spec.name,)),
                ("run_if", spec.run_if, False, spec.depends_on),
            ]
            for field, text, reads_own, names in uses:
                if text is None:
                    continue
                schemas = {name: await _learnt(repositories, job, name) for name in names}
                try:
                    check_condition(text, Scope(spec.name, reads_own, schemas))
                except ConditionError as error:
                    where = f"{source}: job {job!r} endpoint {spec.name!r} field {field!r}"
                    raise InvalidConfig(where, str(error)) from error


async def _learnt(repositories: Repositories, job: str, name: str) -> ShapeNode | None:
    """The output schema learnt for `job/name`, None when it is not stored or answered no
    body yet."""
    try:
        endpoint = await repositories.catalog.get_endpoint(f"{job}/{name}")
    except EndpointNotFound:
        return None
    schema = await repositories.schemas.get_output_schema(endpoint.id)
    return None if schema is None or not schema.observations else schema.root
