"""Listings are laid out for the width rich's console would report, without loading it; their
keys never wrap, and without a width nothing does. Help paragraphs are not broken where the
docstring's lines end."""

from __future__ import annotations

import os
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from cronpilot.adapters.cli.main import unwrap
from cronpilot.adapters.cli.output import TextTable, table_lines, terminal_width


def _no_terminal(descriptor: int) -> os.terminal_size:
    raise OSError(f"descriptor {descriptor} is not a terminal")


@pytest.fixture(autouse=True)
def plain_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.delenv("COLUMNS", raising=False)


@pytest.mark.parametrize("columns", ["57", "0", "wide"])
def test_columns_is_read_as_rich_reads_it(monkeypatch: pytest.MonkeyPatch, columns: str) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    monkeypatch.setattr(os, "get_terminal_size", _no_terminal)
    assert terminal_width() == Console().width
    assert terminal_width() == {"57": 57, "0": 0, "wide": 80}[columns]


def test_the_first_standard_stream_that_is_a_terminal_gives_the_width(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # stdin a terminal, stdout piped (`cronpilot endpoints list | less`): the terminal's width.
    def only_stdin(descriptor: int) -> os.terminal_size:
        if descriptor == 0:
            return os.terminal_size((132, 40))
        return _no_terminal(descriptor)

    monkeypatch.setattr(os, "get_terminal_size", only_stdin)
    assert terminal_width() == Console().width == 132


def test_without_a_terminal_the_width_is_80(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "get_terminal_size", _no_terminal)
    assert terminal_width() == Console().width == 80


REF = "flash-sale/investigator"
TABLE = TextTable(
    ("Proposal", "Endpoint", "Change", "Status", "Reason"),
    frozenset({"Reason"}),
    frozenset({"Proposal", "Endpoint"}),
    [
        ("0b5e1f2a", REF, "interval 10s for 10m", "pending", "the fraud rate rose " * 5),
        ("9c3d4e5f", "shop/orders", "pause until\nresumed", "applied", "quiet"),
    ],
)


@given(st.integers(min_value=1, max_value=200))
def test_at_any_width_the_keys_stay_whole_on_their_rows_first_line(width: int) -> None:
    lines = table_lines(TABLE, width)

    firsts = [line for line in lines[1:] if line[:1].strip()]
    assert [line.split()[:2] for line in firsts] == [["0b5e1f2a", REF], ["9c3d4e5f", "shop/orders"]]


def test_without_a_width_each_row_is_one_line_as_wide_as_it_needs() -> None:
    header, *rows = table_lines(TABLE, None)

    assert header.split() == ["Proposal", "Endpoint", "Change", "Status", "Reason"]
    assert len(rows) == 2
    assert rows[0].endswith(("the fraud rate rose " * 5).strip())
    # The cell's line break is a space: the row stays one line.
    assert re.split(r" {2,}", rows[1]) == [
        "9c3d4e5f",
        "shop/orders",
        "pause until resumed",
        "applied",
        "quiet",
    ]


def test_a_help_paragraph_is_one_line_and_a_laid_out_one_keeps_its_lines() -> None:
    docstring = """Create or update the jobs and endpoints a file declares.

    Endpoints stored under a declared job but missing from the file are left alone (still
    scheduled) and listed.

    - one item
    - another
    """

    assert unwrap(docstring) == (
        "Create or update the jobs and endpoints a file declares.\n\n"
        "Endpoints stored under a declared job but missing from the file are left alone "
        "(still scheduled) and listed.\n\n"
        "- one item\n- another"
    )
