"""Request templates: `{{ fetch.batch_id }}` in a dependant's URL, headers or body names a
field of an upstream endpoint's response, filled in when a DAG run calls the dependant.

The first segment is the upstream endpoint (a sibling in the same job, declared in
`depends_on`), the rest a path into its response: keys, or numbers for list positions
(`{{ fetch.rows.0.id }}`). A body string that is exactly one placeholder takes the upstream
value as it is (a number stays a number); anywhere else the value is written as text
(URL-encoded in the URL), and only scalars fit there.

The placeholders also make the endpoint's input schema (`input_fields`): what it needs, where
it goes and which JSON types can fill it, which the provides edges and the config check use.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

from cronpilot.domain.errors import TemplateUnfilled
from cronpilot.domain.model import JSON, EndpointSpec
from cronpilot.domain.schema_inference import MAX_DEPTH, ShapeNode

_UNSENDABLE = re.compile("[\x00-\x08\x0a-\x1f\x7f]")
"""Control characters but tab: an upstream value carrying CR/LF must not end a header line
and forge another (config refuses them in declared values for the same reason)."""
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z0-9_-]+)((?:\.[A-Za-z0-9_-]+)+)\s*\}\}")
SCALARS = frozenset({"string", "integer", "number", "boolean"})
ANY_TYPE = frozenset({"null", "boolean", "integer", "number", "string", "array", "object"})


@dataclass(frozen=True, slots=True)
class Placeholder:
    upstream: str
    path: tuple[str, ...]

    def __str__(self) -> str:
        return "{{ " + ".".join((self.upstream, *self.path)) + " }}"

    @property
    def field(self) -> str:
        return ".".join(self.path)


@dataclass(frozen=True, slots=True)
class InputField:
    """One input of an endpoint's request."""

    name: str
    """What the input is called where it goes: the query parameter, header, body key, or the
    upstream field's own name in a URL path."""
    where: str
    """`url`, `header.X-Batch`, `body.filter.since`: for messages."""
    accepts: frozenset[str]
    """JSON types that can fill it."""
    placeholder: Placeholder | None = None
    """The declared source; None for a literal value (an input a provider may fill)."""

    @property
    def required(self) -> bool:
        """A placeholder must be filled; a literal has its value already."""
        return self.placeholder is not None


def placeholders(text: str) -> list[Placeholder]:
    return [
        Placeholder(m.group(1), tuple(m.group(2)[1:].split(".")))
        for m in PLACEHOLDER.finditer(text)
    ]


def input_fields(spec: EndpointSpec) -> list[InputField]:
    """The endpoint's inputs: every placeholder (required) and every literal query parameter
    and body value (optional: a provider could fill them, the request works without)."""
    fields = [*_url_inputs(spec.url)]
    for header, value in spec.headers.items():
        fields += [InputField(header, f"header.{header}", SCALARS, p) for p in placeholders(value)]
    fields += _body_inputs(spec.body, ())
    return fields


def _url_inputs(url: str) -> Iterator[InputField]:
    parts = urlsplit(url)
    for p in placeholders(parts.path):
        yield InputField(p.path[-1], "url", SCALARS, p)
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        found = placeholders(value)
        if not found:
            yield InputField(name, f"query.{name}", SCALARS)
        for p in found:
            yield InputField(name, f"query.{name}", SCALARS, p)


def _body_inputs(value: JSON, path: tuple[str, ...]) -> list[InputField]:
    where = ".".join(("body", *path))
    name = path[-1] if path else "body"
    if isinstance(value, dict):
        return [f for key, item in value.items() for f in _body_inputs(item, (*path, str(key)))]
    if isinstance(value, list):
        return [f for i, item in enumerate(value) for f in _body_inputs(item, (*path, str(i)))]
    if isinstance(value, str):
        found = placeholders(value)
        whole = PLACEHOLDER.fullmatch(value.strip()) is not None
        if found:
            accepts = ANY_TYPE if whole else SCALARS
            return [InputField(name, where, accepts, p) for p in found]
    if not path or value is None:
        return []
    return [InputField(name, where, _literal_types(value))]


def _literal_types(value: JSON) -> frozenset[str]:
    if isinstance(value, bool):
        return frozenset({"boolean"})
    if isinstance(value, int | float):
        return frozenset({"integer", "number"})
    return frozenset({"string"})


def lookup(document: JSON, placeholder: Placeholder) -> JSON:
    """The value at the placeholder's path; raises `TemplateUnfilled` when it is not there."""
    node = document
    for key in placeholder.path:
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            raise TemplateUnfilled(str(placeholder), f"the response has no {placeholder.field!r}")
    return node


@dataclass(frozen=True, slots=True)
class FilledRequest:
    url: str
    headers: dict[str, str]
    body: JSON


def fill(spec: EndpointSpec, upstream: Mapping[str, JSON]) -> FilledRequest:
    """The request with every placeholder replaced from `upstream` (responses by endpoint
    name). Raises `TemplateUnfilled` naming the placeholder that cannot be filled."""
    return FilledRequest(
        url=_fill_text(spec.url, upstream, "url"),
        headers={k: _fill_text(v, upstream, "header") for k, v in spec.headers.items()},
        body=_fill_body(spec.body, upstream),
    )


def _value(placeholder: Placeholder, upstream: Mapping[str, JSON]) -> JSON:
    if placeholder.upstream not in upstream:
        raise TemplateUnfilled(str(placeholder), f"no response of {placeholder.upstream!r}")
    return lookup(upstream[placeholder.upstream], placeholder)


def _fill_text(text: str, upstream: Mapping[str, JSON], into: str) -> str:
    """`into` is `url` (values URL-encoded), `header` (no control characters) or `body`."""

    def replace(match: re.Match[str]) -> str:
        placeholder = placeholders(match.group(0))[0]
        value = _value(placeholder, upstream)
        if isinstance(value, dict | list) or value is None:
            raise TemplateUnfilled(str(placeholder), "only a string, number or boolean fits here")
        text = value if isinstance(value, str) else json.dumps(value)
        if into == "url":
            return quote(text, safe="")
        if into == "header" and _UNSENDABLE.search(text):
            raise TemplateUnfilled(str(placeholder), "the value holds a control character")
        return text

    return PLACEHOLDER.sub(replace, text)


def _fill_body(value: Any, upstream: Mapping[str, JSON]) -> JSON:
    if isinstance(value, dict):
        return {key: _fill_body(item, upstream) for key, item in value.items()}
    if isinstance(value, list):
        return [_fill_body(item, upstream) for item in value]
    if isinstance(value, str):
        whole = PLACEHOLDER.fullmatch(value.strip())
        if whole is not None:
            return _value(placeholders(value)[0], upstream)
        return _fill_text(value, upstream, "body")
    return value


def missing_field(root: ShapeNode, placeholder: Placeholder) -> str | None:
    """Why the learnt output schema `root` cannot fill `placeholder`, or None when it can (or
    the path goes below what the schema describes)."""
    node = root
    for depth, key in enumerate(placeholder.path):
        if depth >= MAX_DEPTH:
            return None
        if key.isdigit() and node.items is not None:
            node = node.items
        elif key in node.properties:
            node = node.properties[key]
        else:
            known = ", ".join(sorted(node.properties)) or "none"
            where = ".".join(placeholder.path[:depth]) or "its response"
            return (
                f"template {placeholder}: {placeholder.upstream!r} has answered no field "
                f"{key!r} in {where} (its fields: {known})"
            )
    return None
