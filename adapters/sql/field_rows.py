"""Rows whose columns are named as an entity's fields: one translation for every such table
instead of a column-by-column copy each way."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from enum import Enum
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

D = TypeVar("D", bound="DataclassInstance")


def field_values(item: DataclassInstance, /, **columns: Any) -> dict[str, Any]:
    """Each field of `item` under its own name, an enum as its value; `columns` stand for the
    fields stored otherwise."""
    values: dict[str, Any] = {}
    for field in fields(item):
        value = getattr(item, field.name)
        values[field.name] = value.value if isinstance(value, Enum) else value
    return values | columns


def from_fields(kind: type[D], row: Mapping[Any, Any], /, **columns: Any) -> D:
    """A `kind` from the row's column (or a JSON object's key) of each field's name; `columns`
    stand for the fields read otherwise (an enum from its value, a nested value)."""
    return kind(**{field.name: row[field.name] for field in fields(kind)} | columns)
