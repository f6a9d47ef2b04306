"""jobs.yaml alerts: `notify` and `pause_after` on a job and its endpoints, and their bad input."""

from __future__ import annotations

import pytest

from cronpilot.adapters.jobs_file import parse_declarations
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.model import EndpointSpec

ALLOWED = ["127.0.0.1/32"]
ENV = {"HOOK": "https://hooks.example.com/ops", "PAUSE": "7"}

JOB = """\
jobs:
  - name: shop
{job}
    endpoints:
      - name: orders
        url: https://api.example.com/orders
        interval: 30s
{endpoint}
      - name: stock
        url: https://api.example.com/stock
        interval: 30s
"""
ORDERS = "jobs.yaml: job 'shop' endpoint 'orders'"


def _indent(text: str, spaces: int) -> str:
    return "\n".join(" " * spaces + line for line in text.splitlines())


def _document(job: str = "", endpoint: str = "") -> str:
    return JOB.format(job=_indent(job, 4), endpoint=_indent(endpoint, 8))


def parse(job: str = "", endpoint: str = "") -> dict[str, EndpointSpec]:
    [declaration] = parse_declarations(_document(job, endpoint), "jobs.yaml", ALLOWED, ENV)
    return {spec.name: spec for spec in declaration.endpoints}


def error_of(job: str = "", endpoint: str = "") -> str:
    with pytest.raises(InvalidConfig) as caught:
        parse(job, endpoint)
    message = str(caught.value)
    assert "\n" not in message
    return message


def _alerts(spec: EndpointSpec) -> tuple[tuple[str, ...], int, int | None]:
    return spec.notify, spec.notify_after, spec.pause_after


def test_without_alerts_nothing_is_notified_or_paused() -> None:
    specs = parse()

    assert _alerts(specs["orders"]) == ((), 3, None)


def test_a_job_notifies_for_every_endpoint() -> None:
    specs = parse(job="notify: [https://hooks.example.com/a]\npause_after: 10")

    assert _alerts(specs["orders"]) == (("https://hooks.example.com/a",), 3, 10)
    assert _alerts(specs["stock"]) == (("https://hooks.example.com/a",), 3, 10)


def test_an_endpoint_replaces_the_jobs_settings_one_by_one() -> None:
    specs = parse(
        job="notify: {urls: [https://hooks.example.com/a], after: 5}\npause_after: 10",
        endpoint="notify: {after: 2}\npause_after: 4",
    )

    assert _alerts(specs["orders"]) == (("https://hooks.example.com/a",), 2, 4)
    assert _alerts(specs["stock"]) == (("https://hooks.example.com/a",), 5, 10)


def test_an_empty_list_silences_one_endpoint() -> None:
    specs = parse(job="notify: [https://hooks.example.com/a]", endpoint="notify: []")

    assert specs["orders"].notify == ()
    assert specs["stock"].notify == ("https://hooks.example.com/a",)


def test_variables_work_in_alerts_as_everywhere() -> None:
    specs = parse(
        endpoint='notify: ["${HOOK}", "http://127.0.0.1:9000/hook"]\npause_after: ${PAUSE}'
    )

    assert _alerts(specs["orders"]) == (
        ("https://hooks.example.com/ops", "http://127.0.0.1:9000/hook"),
        3,
        7,
    )


@pytest.mark.parametrize(
    ("job", "endpoint", "expected"),
    [
        (
            "",
            "notify: [http://169.254.169.254/latest/meta-data]",
            f"{ORDERS} field 'notify.urls[0]': refused URL "
            "'http://169.254.169.254/latest/meta-data': 169.254.169.254 is link-local"
            "; to call it, add 169.254.169.254/32 to CRONPILOT_ALLOWED_NETWORKS",
        ),
        (
            "notify: [https://hooks.example.com/a, http://10.0.0.7/hook]",
            "",
            "jobs.yaml: job 'shop' field 'notify.urls[1]': refused URL 'http://10.0.0.7/hook': "
            "10.0.0.7 is private; to call it, add 10.0.0.7/32 to CRONPILOT_ALLOWED_NETWORKS",
        ),
        (
            "",
            "notify: [ftp://hooks.example.com/a]",
            f"{ORDERS} field 'notify.urls[0]': refused URL 'ftp://hooks.example.com/a': "
            "scheme 'ftp' is not http or https",
        ),
        (
            "",
            "notify: ['https://ops:hunter2@hooks.example.com/a']",
            f"{ORDERS} field 'notify.urls[0]': refused URL 'https://hooks.example.com/a': "
            "credentials in the URL; use a header",
        ),
        (
            "",
            "notify: {urls: [https://hooks.example.com/a], after: 0}",
            f"{ORDERS} field 'notify.after': Input should be greater than or equal to 1",
        ),
        (
            "pause_after: 0",
            "",
            "jobs.yaml: job 'shop' field 'pause_after': Input should be greater than or equal to 1",
        ),
        (
            "",
            "pause_after: 100000000000000000000",
            f"{ORDERS} field 'pause_after': Input should be less than or equal to 1000000",
        ),
        (
            "",
            "pause_after: true",
            f"{ORDERS} field 'pause_after': expected a whole number, not true/false",
        ),
        (
            "",
            "notify: https://hooks.example.com/a",
            f"{ORDERS} field 'notify': expected a list of webhook URLs, or "
            "{urls: [...], targets: [...], after: N}",
        ),
        (
            "",
            "notify: [https://hooks.example.com/a, https://hooks.example.com/a]",
            f"{ORDERS} field 'notify.urls[1]': this webhook URL is listed twice",
        ),
        (
            "",
            "notify: {url: [https://hooks.example.com/a]}",
            f"{ORDERS} field 'notify.url': unknown field",
        ),
        (
            "",
            "notify: [" + ", ".join(f"https://h{i}.example.com" for i in range(11)) + "]",
            f"{ORDERS} field 'notify.urls': List should have at most 10 items after validation, "
            "not 11",
        ),
    ],
    ids=[
        "metadata address",
        "private address on the job",
        "not http",
        "credentials",
        "after 0",
        "pause_after 0",
        "pause_after huge",
        "pause_after boolean",
        "a bare string",
        "twice",
        "misspelt",
        "too many",
    ],
)
def test_bad_alerts_are_one_line_naming_the_field(job: str, endpoint: str, expected: str) -> None:
    assert error_of(job, endpoint) == expected
