"""Where a problem lies in a jobs document, and how a message names that place
(`jobs.yaml: job 'etl' endpoint 'fetch' field 'cron'`)."""

from __future__ import annotations

from cronpilot.domain.runs.excerpt import excerpt

Loc = tuple[str | int, ...]


class Issue(Exception):
    """A problem at a location in the document, turned into one `InvalidConfig` line."""

    def __init__(self, loc: Loc, reason: str) -> None:
        super().__init__(reason)
        self.loc = loc
        self.reason = reason


def where(source: str, loc: Loc, raw: object) -> str:
    """`jobs.yaml: job 'etl' endpoint 'fetch' field 'cron'` from a location in the document."""
    parts = [f"{source}:"]
    rest = loc
    node = raw
    for key, label in (("jobs", "job"), ("endpoints", "endpoint")):
        if len(rest) < 2 or rest[0] != key or not isinstance(rest[1], int):
            break
        node = _item(node, key, rest[1])
        name = node.get("name") if isinstance(node, dict) else None
        label_name = excerpt(repr(name)) if isinstance(name, str) else f"#{rest[1] + 1}"
        parts.append(f"{label} {label_name}")
        rest = rest[2:]
    if rest:
        parts.append(f"field {excerpt(repr(_path(rest)))}")
    return " ".join(parts).removesuffix(":")


def _path(loc: Loc) -> str:
    """`rules[0].then`: positions in brackets, as every field path is written (decision 0023)."""
    return "".join(
        f"[{part}]" if isinstance(part, int) else f".{part}" if i else part
        for i, part in enumerate(loc)
    )


def _item(node: object, key: str, index: int) -> object:
    items = node.get(key) if isinstance(node, dict) else None
    return items[index] if isinstance(items, list) and index < len(items) else None
