"""An endpoint's learnt output (schema, volatile fields, drift) as scripts read it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cronpilot.adapters.views.formats import iso

if TYPE_CHECKING:
    from cronpilot.usecases.queries.outputs import LearntOutput


def output_view(learnt: LearntOutput) -> dict[str, Any]:
    schema = learnt.schema
    observed = schema is not None and schema.observations > 0
    return {
        "endpoint": learnt.endpoint.ref,
        "observations": schema.observations if schema else 0,
        "schema": learnt.json_schema() if observed else None,
        "volatile_fields": list(learnt.endpoint.volatile_fields),
        "change_ignores": list(learnt.endpoint.spec.change_ignores),
        "drift": [
            {"run_id": e.run_id, "at": iso(e.at), "changes": list(e.changes)} for e in learnt.drift
        ],
    }
