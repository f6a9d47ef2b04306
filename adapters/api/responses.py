"""The API's one JSON response class."""

from __future__ import annotations

from typing import Any

from fastapi.responses import JSONResponse

from cronpilot.adapters.jsonvalue import dump_json
from cronpilot.adapters.views.formats import tidy


class TidyJSONResponse(JSONResponse):
    """JSON whose floats say what the CLI's `--json` says (`1.344`, not `1.3439999999999999`),
    written by `dump_json`: a stored body may nest deeper than `json.dumps` can recurse."""

    def render(self, content: Any) -> bytes:
        return dump_json(tidy(content)).encode()
