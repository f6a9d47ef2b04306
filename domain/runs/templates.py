"""Request templates: `{{ fetch.batch_id }}` in a dependant's URL, headers or body names a
field of an upstream endpoint's response, filled in when a DAG run calls the dependant.

The first key is the upstream endpoint (a sibling in the same job, declared in `depends_on`),
the rest a field path into its response (`domain.graph.field_paths`: `{{ fetch.rows[0].id }}`, the
dotted `{{ fetch.rows.0.id }}` read as the same). A body string that is exactly one
placeholder takes the upstream value as it is (a number stays a number); anywhere else the
value is written as text (URL-encoded in the URL), and only scalars fit there.

Braces that do not make a placeholder (`{{ fetch }}`, `{{ fetch.batch id }}`, `{{ fetch.id }`,
`{ fetch.id }}`, `{ fetch.id }`) are a `template_mistake`: refused when declared, and never
sent as text.

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
from cronpilot.domain.graph.field_paths import (
    MISSING,
    FieldPath,
    FieldPathError,
    canonical,
    follow,
    parse_field_path,
)
from cronpilot.domain.model import JSON, EndpointSpec
from cronpilot.domain.runs.excerpt import excerpt

_UNSENDABLE = re.compile("[\x00-\x08\x0a-\x1f\x7f]")
"""Control characters but tab: an upstream value carrying CR/LF must not end a header line
and forge another (config refuses them in declared values for the same reason)."""
_BRACED = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
"""A placeholder, or what was meant for one: `{{`, anything, `}}`."""
_HALF_OPENED = re.compile(r"\{[^{}\"':]*[A-Za-z][^{}\"':]*\}\}")
"""`{ fetch.id }}`: one brace short. Text in braces with no quote or colon is no JSON object
(a header may hold one, `{"a":{"b":1}}`), so it was meant as a placeholder."""
_SINGLE = re.compile(r"\{\s*[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*|\[\d+\])+\s*\}")
"""`{ fetch.batch_id }`: a field path in single braces, all but certainly meant as a
placeholder (a JSON object in text has quotes and a colon; `{ x }` names no field)."""
SCALARS = frozenset({"string", "integer", "number", "boolean"})
ANY_TYPE = frozenset({"null", "boolean", "integer", "number", "string", "array", "object"})


@dataclass(frozen=True, slots=True)
class Placeholder:
    upstream: str
    path: FieldPath

    def __str__(self) -> str:
        return "{{ " + canonical((self.upstream, *self.path)) + " }}"

    @property
    def field(self) -> str:
        return canonical(self.path)

    @property
    def name(self) -> str:
        """The field's own name: the last key of its path."""
        return next((str(step) for step in reversed(self.path) if isinstance(step, str)), "")


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
    """The placeholders of `text`, in order; braces that make none are left out (see
    `template_mistake`)."""
    return _scan(text)[0]


@dataclass(frozen=True, slots=True)
class TemplateMistake:
    """Braces that make no placeholder: the text, quoted, and what is wrong with it."""

    text: str
    reason: str

    def __str__(self) -> str:
        return f"template {self.text}: {self.reason}"


def template_mistake(text: str) -> TemplateMistake | None:
    """The first braces of `text` that make no placeholder; None when every `{{`…`}}` is one."""
    return _scan(text)[1]


def _scan(text: str) -> tuple[list[Placeholder], TemplateMistake | None]:
    if "{" not in text:
        return [], None
    found: list[Placeholder] = []
    mistake = None
    for match in _BRACED.finditer(text):
        try:
            found.append(_placeholder(match.group(1)))
        except FieldPathError as exc:
            mistake = mistake or TemplateMistake(excerpt(match.group(0)), str(exc))
    rest = _BRACED.sub(" ", text)
    if mistake is None and "{{" in rest:
        unclosed = excerpt(rest[rest.index("{{") :])
        mistake = TemplateMistake(unclosed, "'{{' is not closed by '}}'")
    elif mistake is None and (half := _HALF_OPENED.search(rest)) is not None:
        mistake = TemplateMistake(excerpt(half.group(0)), "'}}' is not opened by '{{'")
    elif mistake is None and (single := _SINGLE.search(rest)) is not None:
        path = single.group(0)[1:-1].strip()
        reason = f"single braces are sent as text: write {{{{ {path} }}}} for a placeholder"
        mistake = TemplateMistake(excerpt(single.group(0)), reason)
    return found, mistake


def _placeholder(inside: str) -> Placeholder:
    """` fetch.rows[0].id ` → the upstream `fetch` and the path `rows[0].id`."""
    steps = parse_field_path(inside.strip())
    upstream, path = steps[0], steps[1:]
    if not path:
        raise FieldPathError(
            f"names no field of {upstream!r}: write the upstream endpoint and a field, "
            "e.g. {{ fetch.rows[0].id }}"
        )
    return Placeholder(str(upstream), path)


def input_fields(spec: EndpointSpec) -> list[InputField]:
    """The endpoint's inputs: every placeholder (required) and every literal query parameter
    and body value (optional: a provider could fill them, the request works without)."""
    fields = [*_url_inputs(spec.url)]
    for header, value in spec.headers.items():
        fields += [InputField(header, f"header.{header}", SCALARS, p) for p in placeholders(value)]
    fields += _body_inputs(spec.body, ())
    return fields


def first_mistake(spec: EndpointSpec) -> tuple[str, TemplateMistake] | None:
    """The first braces of the endpoint's request that make no placeholder, with where they
    are (`url`, `headers.X-Batch`, `body.filter.since`); None when there are none."""
    texts = [("url", spec.url), *((f"headers.{k}", v) for k, v in spec.headers.items())]
    for where, text in [*texts, *_body_texts(spec.body, "body")]:
        mistake = template_mistake(text)
        if mistake is not None:
            return where, mistake
    return None


def _body_texts(value: JSON, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _body_texts(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _body_texts(item, f"{where}.{i}")
    elif isinstance(value, str):
        yield where, value


def _url_inputs(url: str) -> Iterator[InputField]:
    parts = urlsplit(url)
    for p in placeholders(parts.path):
        yield InputField(p.name, "url", SCALARS, p)
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
        whole = _whole(value, found)
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


def _whole(text: str, found: list[Placeholder]) -> bool:
    """Whether `text` is exactly one placeholder (spaces around it aside)."""
    inner = text.strip()
    return (
        len(found) == 1
        and inner.startswith("{{")
        and inner.endswith("}}")
        and inner.count("{{") == inner.count("}}") == 1
    )


def lookup(document: JSON, placeholder: Placeholder) -> JSON:
    """The value at the placeholder's path; raises `TemplateUnfilled` when it is not there."""
    value = follow(document, placeholder.path)
    if value is MISSING:
        raise TemplateUnfilled(str(placeholder), f"the response has no {placeholder.field!r}")
    return value


@dataclass(frozen=True, slots=True)
class FilledRequest:
    url: str
    headers: dict[str, str]
    body: JSON


def fill(spec: EndpointSpec, upstream: Mapping[str, JSON]) -> FilledRequest:
    """The request with every placeholder replaced from `upstream` (responses by endpoint
    name). Raises `TemplateUnfilled` naming the placeholder that cannot be filled, or braces
    that make none (stored before they were refused): they are never sent as text."""
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
    found, mistake = _scan(text)
    if mistake is not None:
        raise TemplateUnfilled(mistake.text, mistake.reason)
    if not found:
        return text
    each = iter(found)

    def replace(_: re.Match[str]) -> str:
        placeholder = next(each)
        value = _value(placeholder, upstream)
        if isinstance(value, dict | list) or value is None:
            raise TemplateUnfilled(str(placeholder), "only a string, number or boolean fits here")
        text = value if isinstance(value, str) else json.dumps(value)
        if into == "url":
            return quote(text, safe="")
        if into == "header" and _UNSENDABLE.search(text):
            raise TemplateUnfilled(str(placeholder), "the value holds a control character")
        return text

    return _BRACED.sub(replace, text)


def _fill_body(value: Any, upstream: Mapping[str, JSON]) -> JSON:
    if isinstance(value, dict):
        return {key: _fill_body(item, upstream) for key, item in value.items()}
    if isinstance(value, list):
        return [_fill_body(item, upstream) for item in value]
    if isinstance(value, str):
        found = placeholders(value)
        if _whole(value, found):
            return _value(found[0], upstream)
        return _fill_text(value, upstream, "body")
    return value
