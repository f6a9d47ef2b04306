"""Where the planner's `get_output_schema` reads learned output schemas.

Output-schema inference is not wired in yet: until it is, every endpoint answers "no schema
learned yet" and the planner reads fields through `get_latest_response`. Replace
`NoOutputSchemas` in `adapters.bootstrap.build_output_schemas` with the schema store.
"""

from __future__ import annotations

from domain.model import JSON


class NoOutputSchemas:
    async def output_schema(self, endpoint_id: str) -> JSON | None:
        return None
