"""A tool's arguments as the model is shown them: a strict JSON Schema, and a short one.

Strict as OpenAI's `strict: true` and the grammar-constrained decoders of vLLM and llama.cpp
take it: an object with `additionalProperties: false`, every property required, an optional one
as a union with null (null means its default). Short, because the model pays for every
character of every definition on every step: types and descriptions only. Bounds, formats and
defaults stay on our side, in the pydantic model that validates every call (`tool_args`), whose
errors the model reads and corrects.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from cronpilot.domain.model import JSON


def _shown(option: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """An option's type, and its `items` (one level: the tools take lists of strings)."""
    items = option.get("items")
    return option["type"], ({"items": {"type": items["type"]}} if items else {})


def _property(spec: dict[str, Any], optional: bool) -> dict[str, Any]:
    types: list[Any] = []
    shown: dict[str, Any] = {}
    for option in spec.get("anyOf", [spec]):
        kind, items = _shown(option)
        types.append(kind)
        shown.update(items)
    if optional and "null" not in types:
        types.append("null")
    described = {"description": spec["description"]} if "description" in spec else {}
    return {"type": types[0] if len(types) == 1 else types, **shown, **described}


def strict_schema(arguments: type[BaseModel]) -> JSON:
    schema = arguments.model_json_schema()
    required = set(schema.get("required", []))
    properties = {
        name: _property(spec, name not in required) for name, spec in schema["properties"].items()
    }
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
