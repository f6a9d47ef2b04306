"""How the CLI speaks: JSON or YAML for scripts, rich tables for people, one line per error."""

from __future__ import annotations

import io
import os
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer
from rich.cells import cell_len

from cronpilot.adapters.cli import completion
from cronpilot.adapters.jsonvalue import dump_json, json_depth
from cronpilot.adapters.views.formats import SHORT_ID, tidy

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.table import Table


class OutputFormat(StrEnum):
    JSON = "json"
    YAML = "yaml"


OutputOption = Annotated[
    OutputFormat | None,
    typer.Option(
        "--output",
        "-o",
        help="Machine-readable output instead of a table; `--json` is short for `--output json`.",
    ),
]
EndpointRef = Annotated[
    str,
    typer.Argument(
        help="`job/endpoint` or an endpoint id.", autocompletion=completion.endpoint_refs
    ),
]


YAML_BLOCK_DEPTH = 64
"""PyYAML's emitter calls itself a few times per level: a document nested deeper than this is
written in YAML's flow style, which is JSON (`dump_json`, which does not recurse)."""


def print_data(output: OutputFormat, data: object) -> None:
    """Machine-readable output: stable keys, ISO-8601 times, nothing else on stdout; any
    depth of nesting (a stored response body may nest a thousand levels)."""
    plain = tidy(data)
    if output is OutputFormat.JSON or json_depth(plain) > YAML_BLOCK_DEPTH:
        typer.echo(dump_json(plain, indent=2))
        return
    import yaml  # only for the commands asked for YAML: see `bench/cli_startup.py`

    typer.echo(yaml.safe_dump(plain, sort_keys=False, allow_unicode=True), nl=False)


def to_terminal() -> bool:
    """Whether stdout is a terminal. When it is not (a pipe, a file), nothing is wrapped: each
    row of a table, each field of a sheet is one line, whatever its length, so that `grep`
    finds it whole."""
    return sys.stdout.isatty()


UNWRAPPED_WIDTH = 1_000_000
"""The width rich lays out for when stdout is no terminal: more than any line is long."""


def print_table(table: TextTable | Table) -> None:
    """A listing laid out for the terminal's width (`table_lines`), or a rich table as it is."""
    if not isinstance(table, TextTable):
        print_rich(table)
        return
    header, *body = table_lines(table, terminal_width() if to_terminal() else None)
    typer.secho(header, bold=True)
    for line in body:
        typer.echo(line)


def print_rich(*renderables: RenderableType | str) -> None:
    """What rich renders (a sheet, a JSON document, text) for people: at a terminal wrapped at
    its width, else unwrapped (`to_terminal`), with no blanks at the ends of lines."""
    # Imported here: a listing has no use for rich's console (`terminal_width`).
    from rich.console import Console

    if to_terminal():
        console = Console()
        for renderable in renderables:
            console.print(renderable)
        return
    unwrapped = Console(file=io.StringIO(), width=UNWRAPPED_WIDTH)
    with unwrapped.capture() as captured:
        for renderable in renderables:
            unwrapped.print(renderable)
    for line in captured.get().splitlines():
        typer.echo(line.rstrip())


def print_text(line: str) -> None:
    """A line for people, wrapped at a terminal's width (between words where it can be), on
    one line into a pipe."""
    from rich.text import Text

    print_rich(Text(line))


def terminal_width() -> int:
    """The terminal's width as rich's console measures it (80 on a dumb terminal, else
    `COLUMNS`, else the first of stdin, stdout and stderr that is a terminal, else 80), without
    importing rich's console: its styles, themes and renderers cost a listing ~0.03 s."""
    if os.environ.get("TERM", "").lower() in ("dumb", "unknown") and os.isatty(1):
        return 80
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit():
        return int(columns)
    for descriptor in (0, 1, 2):
        try:
            return os.get_terminal_size(descriptor).columns or 80
        except (ValueError, OSError):
            continue
    return 80


def note(message: str) -> None:
    """A remark for people that must not pollute machine-readable stdout."""
    typer.echo(message, err=True)


WRAP_FLOOR = 24
"""The narrowest a free-text column (a reason, a message) is folded to; with less room it goes
on lines of its own under its row."""

_GAP = "  "


@dataclass
class TextTable:
    """A listing: columns of plain text, the `wrap` ones holding free text (a reason, a
    message), which give up width first, and the `keys` (an id, an endpoint's ref), which
    never wrap nor shrink: they are what a reader looks for, and what `grep` matches."""

    headers: tuple[str, ...]
    wrap: frozenset[str]
    keys: frozenset[str] = frozenset()
    rows: list[tuple[str, ...]] = field(default_factory=list)


KEY_HEADERS = frozenset({"Endpoint"})
"""Columns that are keys wherever they stand, beside a table's first."""


def new_table(*columns: str, wrap: Sequence[str] = ()) -> TextTable:
    """The first column and an `Endpoint` column are the table's keys (`TextTable`)."""
    return TextTable(columns, frozenset(wrap), frozenset(columns[:1]) | KEY_HEADERS)


def add_row(table: TextTable, *cells: str) -> None:
    table.rows.append(cells)


def rich_table(*columns: str) -> Table:
    """A rich table (for a live display) whose first column (the thing's name) never wraps:
    the others give up width first, and a word too long for theirs ends in `…`."""
    from rich.table import Table

    table = Table(show_edge=False, header_style="bold")
    for i, column in enumerate(columns):
        table.add_column(column, no_wrap=i == 0, overflow="fold" if i == 0 else "ellipsis")
    return table


def table_lines(table: TextTable, width: int | None) -> list[str]:
    """The table as lines no longer than `width` (the header line first). Free-text columns
    shrink to fit, down to `WRAP_FLOOR`; when that is not enough they go under each row
    (`  reason: …`). Only then do the widest of the others shrink, down to their header or
    `SHORT_ID` characters, whichever is wider (less when their content is shorter); the keys
    never do, so a line may be wider than `width` when they alone do not fit. Cells wrap
    between words where they can. With no `width`, one line per row: nothing wraps."""
    if width is None:
        return _unwrapped_lines(table)
    free = [i for i, h in enumerate(table.headers) if h in table.wrap]
    inline = list(range(len(table.headers)))
    widths = _fitted(table, inline, width, squeeze=False)
    below = [] if widths is not None else free
    if widths is None:
        inline = [i for i in inline if i not in below]
        widths = _fitted(table, inline, width, squeeze=False) or _fitted(
            table, inline, width, squeeze=True
        )
    widths = widths or _narrowest(table, inline)
    lines = _row_lines([table.headers[i] for i in inline], widths)
    for row in table.rows:
        lines += _row_lines([row[i] for i in inline], widths)
        for i in below:
            if row[i]:
                text = f"{table.headers[i].lower()}: {row[i]}"
                # Folded to no less than `WRAP_FLOOR`, however narrow the terminal.
                room = max(width - len(_GAP), WRAP_FLOOR)
                lines += [f"{_GAP}{part}" for part in _wrapped(text, room)]
    return lines


def _fitted(table: TextTable, columns: list[int], width: int, *, squeeze: bool) -> list[int] | None:
    """Widths for `columns` that fit in `width`, or None when a free-text column would get
    less than `WRAP_FLOOR`, or the others less than their content (`squeeze`: less than
    their header or `SHORT_ID`)."""
    headers = [cell_len(table.headers[i]) for i in columns]
    natural = [
        max([h, *(_longest_line(row[i]) for row in table.rows)])
        for h, i in zip(headers, columns, strict=True)
    ]
    free = [table.headers[i] in table.wrap for i in columns]
    keys = [table.headers[i] in table.keys for i in columns]
    readable = [
        n if k else min(n, WRAP_FLOOR) if f else max(h, min(n, SHORT_ID))
        for h, n, f, k in zip(headers, natural, free, keys, strict=True)
    ]
    room = width - len(_GAP) * (len(columns) - 1)
    widths = list(natural)
    first = [r if f else n for r, n, f in zip(readable, natural, free, strict=True)]
    for floors in (first, readable) if squeeze else (first,):
        _shrink(widths, floors, sum(widths) - room)
    return widths if sum(widths) <= room else None


def _narrowest(table: TextTable, columns: list[int]) -> list[int]:
    """Widths when nothing fits: a key whole, every other column its header's width."""
    return [
        max([cell_len(table.headers[i]), *(_longest_line(row[i]) for row in table.rows)])
        if table.headers[i] in table.keys
        else cell_len(table.headers[i])
        for i in columns
    ]


def _unwrapped_lines(table: TextTable) -> list[str]:
    """Every column as wide as its widest cell, each cell on one line (its line breaks and
    runs of blanks made single spaces)."""
    rows = [tuple(" ".join(cell.split()) for cell in row) for row in [table.headers, *table.rows]]
    widths = [max(cell_len(row[i]) for row in rows) for i in range(len(table.headers))]
    return [
        _GAP.join(_pad(cell, w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def _longest_line(text: str) -> int:
    return max((cell_len(line) for line in text.splitlines()), default=0)


def _shrink(widths: list[int], floors: Sequence[int], excess: int) -> None:
    """Take up to `excess` characters from the widest columns above their floors, one at a
    time, so that the widest come down level with each other."""
    while excess > 0:
        above = [i for i, w in enumerate(widths) if w > floors[i]]
        if not above:
            return
        widest = max(above, key=lambda i: widths[i])
        widths[widest] -= 1
        excess -= 1


def _wrapped(text: str, width: int) -> list[str]:
    lines = [part for line in text.splitlines() for part in textwrap.wrap(line, width)]
    return lines or [""]


def _row_lines(cells: Sequence[str], widths: Sequence[int]) -> list[str]:
    folded = [_wrapped(cell, w) for cell, w in zip(cells, widths, strict=True)]
    height = max(len(parts) for parts in folded)
    return [
        _GAP.join(
            _pad(parts[n] if n < len(parts) else "", w)
            for parts, w in zip(folded, widths, strict=True)
        ).rstrip()
        for n in range(height)
    ]


def _pad(text: str, width: int) -> str:
    return text + " " * (width - cell_len(text))


def details_table(rows: Sequence[tuple[str, str]]) -> Table:
    """A two-column label/value sheet for `show` commands."""
    from rich.table import Table
    from rich.text import Text

    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for label, value in rows:
        table.add_row(label, Text(value))
    return table
