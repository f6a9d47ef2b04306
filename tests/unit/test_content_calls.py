"""Tool calls as local servers write them, read as the planner reads calls."""

from __future__ import annotations

import itertools
import json

import pytest

from cronpilot.adapters.llm.content_calls import arguments_text, calls_in_content

ARGS = {"fields": ["a"], "endpoint": None}


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        pytest.param(ARGS, json.dumps(ARGS), id="an-object-as-ollama-sends-it"),
        pytest.param(json.dumps(ARGS), json.dumps(ARGS), id="json-text"),
        pytest.param(json.dumps(json.dumps(ARGS)), json.dumps(ARGS), id="double-encoded"),
        pytest.param('{"fields": [', '{"fields": [', id="broken-left-for-the-tool-to-refuse"),
        pytest.param('"just text"', '"just text"', id="a-string-holding-no-object"),
        pytest.param(None, "", id="none"),
    ],
)
def test_arguments_become_the_json_text_of_an_object(given: object, expected: str) -> None:
    assert arguments_text(given) == expected


def test_calls_written_in_the_text_are_found_with_made_up_ids() -> None:
    ids = itertools.count(7)
    text = (
        "I will read first.\n"
        '<tool_call>{"name": "get_response_history", "arguments": {"limit": 2}}</tool_call>\n'
        '<tool_call>{"function": {"name": "submit_analysis", "arguments": "{}"}}</tool_call>'
    )

    calls = calls_in_content(text, ids)

    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("call_7", "get_response_history", '{"limit": 2}'),
        ("call_8", "submit_analysis", "{}"),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "All looks fine.",
        '{"status": "ok"}',
        '[{"name": "submit_analysis"}, {"colour": "red"}]',
        "<tool_call>not json</tool_call>",
        "",
        None,
    ],
)
def test_text_that_is_no_call_gives_none(text: str | None) -> None:
    assert calls_in_content(text, itertools.count()) == []
