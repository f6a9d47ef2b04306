"""How a value of any length is quoted in an error line, a log or a stored message: cut, with
its length said, so that a 100 KB value in a jobs file or an 8,000-character reason phrase
from a server leaves one readable line, not a page."""

from __future__ import annotations

EXCERPT_CHARS = 80


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """`text` itself when it has at most `limit` characters, else its first `limit` followed by
    `… (12,345 chars)`: the mark tells a reader the value goes on, and by how much."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} chars)"
