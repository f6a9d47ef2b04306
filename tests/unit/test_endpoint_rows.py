"""`endpoint_from_row` reads NULL in `EMPTY_AS_NULL`'s columns as empty, as the PostgreSQL claim
statement sends them (`claim_statement._endpoint_columns`), and reads them as stored otherwise."""

from __future__ import annotations

import json
from typing import Any

from cronpilot.adapters.sql.rows import EMPTY_AS_NULL, endpoint_from_row, endpoint_values
from cronpilot.domain.model import Endpoint, EndpointSpec, Schedule


def _row(endpoint: Endpoint) -> dict[str, Any]:
    job = {"job_name": endpoint.job_name}
    return (
        endpoint_values(endpoint, None)
        | job
        | {f"job_pause_{n}": None for n in ("reason", "until", "by")}
    )


def test_an_empty_column_sent_as_null_reads_as_empty() -> None:
    endpoint = Endpoint(
        "e1", "j1", "job", EndpointSpec("e", "http://x/", Schedule(interval_seconds=60))
    )
    row = _row(endpoint)
    # The claim statement compares each column with this literal: a stale one would send the
    # empty value and cost the decoder call again.
    assert {name: row[name] for name in EMPTY_AS_NULL} == {
        name: json.loads(empty) for name, empty in EMPTY_AS_NULL.items()
    }

    assert endpoint_from_row(row | dict.fromkeys(EMPTY_AS_NULL), None) == endpoint
    assert endpoint_from_row(row, None) == endpoint


def test_filled_columns_read_as_stored() -> None:
    spec = EndpointSpec(
        "e",
        "http://x/",
        Schedule(interval_seconds=60),
        headers={"Accept": "application/json"},
        notify=("http://hooks/a",),
        depends_on=("other",),
        change_ignores=("at",),
    )
    endpoint = Endpoint("e1", "j1", "job", spec, volatile_fields=("id",))

    assert endpoint_from_row(_row(endpoint), None) == endpoint
