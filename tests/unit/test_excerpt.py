"""Values of any length are quoted in one readable line."""

from __future__ import annotations

from cronpilot.domain.runs.excerpt import excerpt


def test_a_short_value_is_kept_whole() -> None:
    assert excerpt("x" * 80) == "x" * 80


def test_a_long_value_keeps_its_start_and_says_its_length() -> None:
    assert excerpt("x" * 12_345) == f"{'x' * 80}… (12,345 chars)"
    assert excerpt("abcdef", limit=3) == "abc… (6 chars)"
