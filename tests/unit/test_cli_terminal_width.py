"""Listings are laid out for the width rich's console would report, without loading it."""

from __future__ import annotations

import os

import pytest
from rich.console import Console

from cronpilot.adapters.cli.output import terminal_width


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
