"""jobs.yaml: `limits:` and the `limit:` a job or an endpoint names, accepted and refused in
one line."""

from __future__ import annotations

import pytest

from cronpilot.adapters.jobs_file import parse_declarations
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.ports import JobDeclaration
from cronpilot.domain.schedule.limits import Limit, Rate

JOBS = """\
limits:
  partner-api: {concurrency: 2, rate: 5/s}
  api.example.net: {rate: 100/m, burst: 10}
jobs:
  - name: shop
    limit: partner-api
    endpoints:
      - name: stock
        url: https://93.184.216.34/stock
        interval: 1m
      - name: report
        url: https://api.example.net/report
        interval: 1m
        limit: api.example.net
  - name: feeds
    endpoints:
      - name: by-host
        url: https://api.example.net/feed
        interval: 1m
      - name: free
        url: https://93.184.216.34/free
        interval: 1m
"""


def parse(text: str) -> list[JobDeclaration]:
    return parse_declarations(text, "jobs.yaml", [], {})


def error_of(text: str) -> str:
    with pytest.raises(InvalidConfig) as caught:
        parse(text)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_keys_named_by_a_job_an_endpoint_or_the_host() -> None:
    shop, feeds = parse(JOBS)

    assert [spec.limit for spec in shop.endpoints] == ["partner-api", "api.example.net"]
    assert [spec.limit for spec in feeds.endpoints] == ["api.example.net", None]
    partner = Limit("partner-api", concurrency=2, rate=Rate(5, 1.0))
    host = Limit("api.example.net", rate=Rate(100, 60.0), burst=10)
    assert list(shop.limits) == [host, partner]
    assert list(feeds.limits) == [host]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("{concurrency: 2, rate: 5/s}", "{concurrency: 0}", "must be at least 1"),
        ("{concurrency: 2, rate: 5/s}", "{rate: 0/s}", "at least one call per period"),
        ("{concurrency: 2, rate: 5/s}", "{rate: five a second}", "is not a rate"),
        ("{concurrency: 2, rate: 5/s}", "{rate: 5}", "expected calls per period as text"),
        ("{concurrency: 2, rate: 5/s}", "{burst: 3}", "set concurrency, rate or both"),
        ("limit: partner-api", "limit: partner", "unknown limit 'partner'"),
        ("limit: api.example.net", "limit: nowhere", "unknown limit 'nowhere'"),
    ],
)
def test_bad_limits_are_one_clear_line(old: str, new: str, expected: str) -> None:
    assert expected in error_of(JOBS.replace(old, new, 1))


def test_an_unknown_key_names_the_declared_ones() -> None:
    message = error_of(JOBS.replace("limit: partner-api", "limit: partner", 1))

    assert message.startswith("jobs.yaml: job 'shop' field 'limit'")
    assert "declared under limits: api.example.net, partner-api" in message
