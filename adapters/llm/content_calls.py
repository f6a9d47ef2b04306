"""Tool calls as servers other than OpenAI's write them, made into what the planner reads.

Ollama and llama.cpp's generic chat formats may leave a call in the message's text
(`<tool_call>{"name": …, "arguments": {…}}</tool_call>`, or the bare JSON object), leave out the
call's id, or send the arguments as an object, or as a JSON string inside a JSON string. The
planner gets one shape whatever the server: an id, a name, and the arguments as JSON text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from cronpilot.domain.planning.planning import ToolCallRequest

_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def arguments_text(arguments: Any) -> str:
    """The arguments as the JSON text of an object when they are one, however wrapped (an
    object, its text, or that text encoded once more as a JSON string); else as they came, for
    the tool to answer with its own error."""
    if isinstance(arguments, dict):
        return json.dumps(arguments)
    if not isinstance(arguments, str):
        return "" if arguments is None else json.dumps(arguments)
    try:
        inner = json.loads(arguments)
        if isinstance(inner, str) and isinstance(json.loads(inner), dict):
            return inner
    except json.JSONDecodeError:
        pass  # not JSON, or a string that holds none: as it came
    return arguments


def call_id(given: Any, made_up: Iterator[int]) -> str:
    """The call's id, or a new one: the tool's answer must name the call it answers."""
    return given if isinstance(given, str) and given else f"call_{next(made_up)}"


def _call(found: Any, made_up: Iterator[int]) -> ToolCallRequest | None:
    if not isinstance(found, dict):
        return None
    function = found.get("function", found)
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(name, str) or not name:
        return None
    arguments = function.get("arguments", function.get("parameters", {}))
    return ToolCallRequest(call_id(found.get("id"), made_up), name, arguments_text(arguments))


def calls_in_content(content: str | None, made_up: Iterator[int]) -> list[ToolCallRequest]:
    """The tool calls a reply wrote in its text: tagged, or the whole text as one JSON object
    (or a list of them); none when the text is anything else."""
    if not content:
        return []
    tagged = _TAGGED.findall(content)
    fenced = _FENCE.match(content.strip())
    texts = tagged or [fenced.group(1) if fenced else content.strip()]
    found: list[Any] = []
    for text in texts:
        try:
            decoded = json.loads(text)
        except json.JSONDecodeError:
            return []
        found.extend(decoded if isinstance(decoded, list) else [decoded])
    calls = [_call(item, made_up) for item in found]
    return [call for call in calls if call is not None] if all(calls) else []
