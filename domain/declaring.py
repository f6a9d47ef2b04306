"""What applying declarations (a jobs file) makes of the stored catalog. The store reads the
declared jobs as stored (`CatalogRepository.declared_jobs`), `applied` decides, and the store
writes the decision in one go (`CatalogRepository.save_applied`): no store applies a rule of
its own, so every store applies the same ones."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from cronpilot.domain.model import Endpoint, EndpointSpec, Job, new_id
from cronpilot.domain.ports.catalog import Applied, JobDeclaration, StoredJob
from cronpilot.domain.runs.transitions import replanned, with_spec


def applied(
    declarations: Sequence[JobDeclaration], stored: Sequence[StoredJob], now: datetime
) -> Applied:
    """Matching is by job name and (job, endpoint name): ids of stored rows are kept, runtime
    state (hints, pause, failures, last slot) survives, the next run is re-planned. Jobs and
    endpoints absent from `declarations` are left alone; endpoints of a declared job that are
    not declared are reported `absent` (in name order within each job). The same declarations
    applied twice report everything `unchanged` the second time."""
    known = {s.job.name: s for s in stored}
    decided = Applied(limits=[limit for d in declarations for limit in d.limits])
    for declaration in declarations:
        found = known.get(declaration.job.name)
        job = _job(declaration.job, None if found is None else found.job, decided)
        endpoints = {} if found is None else {e.name: e for e in found.endpoints}
        for spec in declaration.endpoints:
            _endpoint(job, spec, endpoints.get(spec.name), now, decided)
        names = {spec.name for spec in declaration.endpoints}
        decided.report.absent.extend(
            f"{job.name}/{name}" for name in sorted(endpoints) if name not in names
        )
    return decided


def _job(declared: Job, stored: Job | None, decided: Applied) -> Job:
    if stored is None:
        decided.new_jobs.append(declared)
        decided.report.created.append(declared.name)
        return declared
    if stored.declared == declared.declared:
        decided.report.unchanged.append(declared.name)
        return stored
    changed = replace(declared, id=stored.id, pause=stored.pause)
    decided.changed_jobs.append(changed)
    decided.report.updated.append(declared.name)
    return changed


def _endpoint(
    job: Job, spec: EndpointSpec, stored: Endpoint | None, now: datetime, decided: Applied
) -> None:
    ref = f"{job.name}/{spec.name}"
    if stored is None:
        created = Endpoint(new_id(), job.id, job.name, spec, job_pause=job.pause)
        decided.new_endpoints.append(replanned(created, now))
        decided.report.created.append(ref)
    elif stored.spec == spec:
        decided.report.unchanged.append(ref)
    else:
        decided.changed_endpoints.append(with_spec(stored, spec, now))
        decided.report.updated.append(ref)
