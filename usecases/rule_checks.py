"""Response rules checked at apply (decision 0026): each rule's condition is compiled and
type-checked against what the job's endpoints have answered so far (their learnt output
schemas), as templates are; a field no response ever had is refused, naming those seen."""

from __future__ import annotations

from collections.abc import Sequence

from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.graph.schema_inference import ShapeNode
from cronpilot.domain.ports import JobDeclaration, Repositories
from cronpilot.domain.rules.conditions import ConditionError, Scope, check_condition

UNKEPT_HEADERS = (
    "a rule reads the stored responses, and their headers are not kept: read body, status "
    "or duration_ms"
)


async def check_rules(
    repositories: Repositories, declarations: Sequence[JobDeclaration], source: str
) -> None:
    """Raises `InvalidConfig` naming file (`source`), job, endpoint, `rules[N].when` and the
    position in the condition. An endpoint not stored yet, or without a body so far, has no
    schema: any field of it passes."""
    for declaration in declarations:
        job = declaration.job.name
        if not any(spec.rules for spec in declaration.endpoints):
            continue
        stored = {e.name: e.id for e in await repositories.catalog.list_endpoints(job)}
        learnt = await repositories.schemas.get_output_schemas(list(stored.values()))
        shapes: dict[str, ShapeNode | None] = {}
        for spec in declaration.endpoints:
            schema = learnt.get(stored.get(spec.name, ""))
            shapes[spec.name] = None if schema is None else schema.root
        for spec in declaration.endpoints:
            scope = Scope(spec.name, True, shapes)
            for i, rule in enumerate(spec.rules):
                where = f"{source}: job {job!r} endpoint {spec.name!r} field 'rules[{i}].when'"
                try:
                    checked = check_condition(rule.when, scope)
                except ConditionError as error:
                    raise InvalidConfig(where, str(error)) from error
                if "headers" in checked.roots:
                    raise InvalidConfig(where, UNKEPT_HEADERS)
