"""The one skeleton of a CLI listing (`sessions list`, `proposals list`, `audit list`, …):
`--json`/`--yaml` prints the views, an empty listing prints one note, anything else a table
of one row an item, times shown against the clock's now."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Generic, NamedTuple, TypeVar

import typer

from cronpilot.adapters.bootstrap import build_clock
from cronpilot.adapters.cli.output import (
    OutputFormat,
    add_row,
    new_table,
    note,
    print_data,
    print_table,
)
from cronpilot.adapters.cli.runtime import admin_settings, with_store
from cronpilot.domain.paging import Page
from cronpilot.domain.ports import ReadingFactory, Store
from cronpilot.usecases.queries import catalog
from cronpilot.usecases.queries.catalog import E

T = TypeVar("T")

JobFilter = Annotated[str | None, typer.Option(help="Only this job's endpoints.")]
EndpointFilter = Annotated[
    str | None, typer.Option(help="Only this endpoint's (`job/endpoint` or an id).")
]
LimitOption = Annotated[int, typer.Option(min=1, max=1000, help="How many, newest first.")]


class Referenced(NamedTuple, Generic[E]):
    """An item with its endpoint's `job/endpoint` ref (`?` for one deleted since)."""

    item: E
    ref: str


@dataclass(frozen=True)
class Listing(Generic[T]):
    """How a command lists its items: `view` the `--json` shape, `row` a table row's cells
    (in `columns` order) given the time now, `empty` the note for none."""

    empty: str
    columns: tuple[str, ...]
    row: Callable[[T, datetime], Sequence[str]]
    view: Callable[[T], object]
    wrap: tuple[str, ...] = ()

    def show(
        self, items: Sequence[T], output: OutputFormat | None, now: datetime | None = None
    ) -> None:
        """Print `items` as data, as the empty note, or as a table."""
        if output:
            print_data(output, [self.view(item) for item in items])
            return
        if not items:
            note(self.empty)
            return
        at = build_clock().now() if now is None else now
        table = new_table(*self.columns, wrap=self.wrap)
        for item in items:
            add_row(table, *self.row(item, at))
        print_table(table)


def with_endpoint_refs(
    query: Callable[[ReadingFactory], Awaitable[Page[E]]],
) -> list[Referenced[E]]:
    """The first page of `query`, each item beside its endpoint's ref."""

    async def act(store: Store) -> list[Referenced[E]]:
        page = await query(store.reading)
        return [Referenced(*pair) for pair in await catalog.beside_refs(store.reading, page.items)]

    return with_store(admin_settings(), act)
