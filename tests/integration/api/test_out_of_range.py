"""Out-of-range values on every write and list route: dates at the calendar's ends and offsets,
durations and sizes past any bound, huge and negative limits, odd ids and cursors. Whatever
comes in, the answer is a 2xx or a 4xx problem, never a 5xx (schemathesis, beside this,
covers the shapes the OpenAPI document allows; this covers the values at its edges)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from urllib.parse import quote

import httpx
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.integration.api.conftest import bearer

Request = tuple[str, str, dict[str, Any]]
"""Method, path and httpx's keyword arguments."""

ZONES = [timezone(timedelta(hours=h, minutes=m)) for h, m in ((14, 0), (-12, 0), (5, 45))]
EDGES = [
    "9999-12-31T23:59:59+14:00",
    "9999-12-31T23:59:59.999999-23:59",
    "0001-01-01T00:00:00+14:00",
    "0001-01-01T00:00:00-14:00",
    "2100-01-01T00:00:00Z",
    "1970-01-01T00:00:00Z",
    "9999-12-31T23:59:59",
]
DATES = st.one_of(
    st.sampled_from(EDGES),
    st.datetimes(timezones=st.sampled_from([UTC, *ZONES])).map(datetime.isoformat),
)
HUGE = st.one_of(
    st.sampled_from([0, -1, 2**31, 2**53 + 1, 2**63, 2**64, 10**30]),
    st.integers(-(2**70), 2**70),
)
NUMBERS = st.one_of(HUGE, st.floats(allow_nan=False), st.sampled_from([1e308, -0.0, 1e-9]))
DURATIONS = st.one_of(
    NUMBERS,
    st.builds(
        "{}{}".format,
        st.one_of(HUGE, st.sampled_from(["1e400", "0.0000001", "99999999999"])),
        st.sampled_from(["ms", "s", "m", "h", "d", "w", ""]),
    ),
)
IDS = st.one_of(
    st.text(min_size=1, max_size=80),
    st.sampled_from(["0", "-1", "x" * 5000, "%00", "..", "ffffffff-ffff"]),
).map(lambda text: quote(text, safe=""))
LISTS = ["/runs", "/proposals", "/sessions", "/notifications", "/approvals"]
DURATION_FIELDS = [
    "interval",
    "min_interval",
    "max_interval",
    "timeout",
    "jitter",
    "catch_up_window",
]


def _pause(until: str) -> Request:
    return "POST", "/endpoints/shop/stock/pause", {"json": {"reason": "edge", "until": until}}


def _backfill(start: str, end: str, slots: int) -> Request:
    body = {"start": start, "end": end, "max_slots": slots}
    return "POST", "/endpoints/shop/stock/backfill", {"json": body}


def _listed(path: str, limit: Any, cursor: str) -> Request:
    return "GET", path, {"params": {"limit": str(limit), "cursor": cursor}}


def _by_id(template: str, ident: str) -> Request:
    method, path = template.split(" ")
    body = {"json": {"reason": "edge"}} if method == "POST" else {}
    return method, path.format(ident), body


def _applied(field: str, value: Any, size: Any) -> Request:
    endpoint = {
        "name": "edge",
        "url": "https://example.com/edge",
        "interval": "60s",
        "max_response_size": size,
        field: value,
    }
    document = {"jobs": [{"name": "edges", "endpoints": [endpoint]}]}
    return "POST", "/apply", {"content": yaml.safe_dump(document)}


REQUESTS = st.one_of(
    st.builds(_pause, DATES),
    st.builds(_backfill, DATES, DATES, HUGE),
    st.builds(_listed, st.sampled_from(LISTS), NUMBERS, st.text(max_size=40)),
    st.builds(
        _by_id,
        st.sampled_from(
            [
                "GET /runs/{}",
                "GET /proposals/{}",
                "GET /sessions/{}",
                "POST /proposals/{}/reject",
                "POST /approvals/{}/approve",
                "GET /endpoints/shop/{}",
                "GET /jobs/{}",
            ]
        ),
        IDS,
    ),
    st.builds(
        lambda drift: ("GET", "/endpoints/shop/stock/schema", {"params": {"drift": drift}}),
        NUMBERS,
    ),
    st.builds(_applied, st.sampled_from(DURATION_FIELDS), DURATIONS, st.one_of(HUGE, DURATIONS)),
)


def _answered(client: httpx.Client) -> Callable[[Request], None]:
    def check(request: Request) -> None:
        method, path, options = request
        response = client.request(method, path, **options)
        where = f"{method} {path} {options}"[:300]
        assert response.status_code < 500, f"{where}: {response.status_code} {response.text}"
        if response.status_code >= 400:
            assert response.headers["content-type"] == "application/problem+json", where
            assert "\n" not in response.json()["detail"], where

    return check


def test_no_out_of_range_value_is_a_5xx(served: tuple[str, str]) -> None:
    base, secret = served
    with httpx.Client(base_url=base, headers=bearer(secret), timeout=30) as client:
        check = _answered(client)

        @given(request=REQUESTS)
        @settings(
            max_examples=300,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def drive(request: Request) -> None:
            check(request)

        drive()
