"""Ids and their prefixes. Every id is 32 lowercase hex digits (`model.new_id`); wherever a
command takes one it also takes a unique prefix of at least `MIN_PREFIX` digits, as git takes
commit hashes (`docs/decisions/0020-id-prefixes.md`). Each store resolves prefixes itself, with
`id_prefix` and `only_match` deciding what counts as one and what a match means."""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from typing import TypeVar

from cronpilot.domain.errors import AmbiguousId

T = TypeVar("T")

ID_LENGTH = 32
MIN_PREFIX = 4
CANDIDATES = 5
"""How many matches an ambiguous prefix names; a store fetches one more to know there are more."""

_HEX = frozenset(string.hexdigits)


def id_prefix(text: str) -> str | None:
    """`text` as an id prefix to look up (lower case), or None when it cannot be one: shorter
    than `MIN_PREFIX`, a whole id's length or longer, or not hexadecimal."""
    if not MIN_PREFIX <= len(text) < ID_LENGTH or not _HEX.issuperset(text):
        return None
    return text.lower()


def only_match(kind: str, prefix: str, matches: Sequence[str]) -> str | None:
    """The one id among `matches` (the ids starting with `prefix`, in order, at most
    `CANDIDATES + 1`); None when there is none. Raises `AmbiguousId` when there are several."""
    if len(matches) > 1:
        raise AmbiguousId(kind, prefix, matches[:CANDIDATES], more=len(matches) > CANDIDATES)
    return matches[0] if matches else None


def by_id_or_prefix(kind: str, text: str, items: Mapping[str, T]) -> T | None:
    """The item whose id is `text`, else the one whose id starts with it (an in-memory store's
    lookup; SQL stores ask the database for the matches)."""
    if text in items:
        return items[text]
    prefix = id_prefix(text)
    if prefix is None:
        return None
    matches = sorted(key for key in items if key.startswith(prefix))
    found = only_match(kind, prefix, matches[: CANDIDATES + 1])
    return None if found is None else items[found]
