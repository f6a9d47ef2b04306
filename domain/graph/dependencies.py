"""A job's declared DAG, checked as a whole: upstreams exist, nothing loops, templates name
declared upstreams; and each endpoint learns its dependants."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from cronpilot.domain.errors import InvalidDependency
from cronpilot.domain.graph.field_paths import addressable, canonical
from cronpilot.domain.graph.graph import find_cycle
from cronpilot.domain.model import EndpointSpec
from cronpilot.domain.runs.templates import Placeholder, first_mistake, input_fields


def with_dependants(specs: Sequence[EndpointSpec]) -> list[EndpointSpec]:
    """`specs` with `dependants` filled in. Raises `InvalidDependency` for an unknown
    upstream, a cycle (named in order), or a template naming an endpoint not in `depends_on`."""
    names = [spec.name for spec in specs]
    for index, spec in enumerate(specs):
        for upstream in spec.depends_on:
            if upstream not in names:
                raise InvalidDependency(
                    index, "depends_on", f"unknown upstream {upstream!r} (not in this job)"
                )
        mistake = first_mistake(spec)
        if mistake is not None:
            raise InvalidDependency(index, mistake[0], str(mistake[1]))
        for item in input_fields(spec):
            placeholder = item.placeholder
            if placeholder is not None and placeholder.upstream not in spec.depends_on:
                raise InvalidDependency(index, item.where, _unknown_upstream(spec, placeholder))
    cycle = find_cycle({spec.name: spec.depends_on for spec in specs})
    if cycle is not None:
        raise InvalidDependency(
            names.index(cycle[0]),
            "depends_on",
            f"dependency cycle {' -> '.join([*cycle, cycle[0]])}",
        )
    return [
        replace(spec, dependants=tuple(s.name for s in specs if spec.name in s.depends_on))
        for spec in specs
    ]


def _unknown_upstream(spec: EndpointSpec, placeholder: Placeholder) -> str:
    """Why `placeholder` names no upstream of `spec`: one that it cannot name (`fetch.v2`, read
    as field `v2` of `fetch`), or none at all."""
    written = canonical((placeholder.upstream, *placeholder.path))
    for upstream in spec.depends_on:
        if not addressable(upstream) and written.startswith((f"{upstream}.", upstream + "[")):
            return (
                f"template {placeholder} cannot name {upstream!r}: a template's first key is "
                f"letters, digits, '_' and '-', so it reads {placeholder.field!r} of "
                f"{placeholder.upstream!r}; rename the upstream endpoint"
            )
    return f"template {placeholder} names {placeholder.upstream!r}, which is not in depends_on"
