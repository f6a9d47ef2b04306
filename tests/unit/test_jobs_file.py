"""jobs.yaml parsing: what a valid file becomes, and one precise line for every bad input."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from cronpilot.adapters.jobs_file import (
    MAX_FILE_BYTES,
    example_jobs_file,
    load_declarations,
    parse_declarations,
    parse_duration,
    parse_size,
)
from cronpilot.adapters.settings import load_settings
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.model import PlannerMode, Schedule
from cronpilot.domain.ports import JobDeclaration

ALLOWED = ["127.0.0.1/32"]
ENV = {"BASE": "http://127.0.0.1:8080", "TOKEN": "s3cret"}

VALID = """\
jobs:
  - name: etl
    description: nightly pipeline
    planner_mode: off
    endpoints:
      - name: fetch
        url: ${BASE}/etl/fetch
        interval: 1m30s
        min_interval: 10s
        max_interval: 1h
        headers: {Authorization: "Bearer ${TOKEN}"}
        max_response_size: 2KB
        timeout: 5s
      - name: nightly
        description: the big one
        url: https://93.184.216.34/report
        method: post
        body: {since: yesterday}
        cron: "0 3 * * *"
        timezone: Europe/Paris
        planner_mode: review
"""

ENDPOINT = "jobs.yaml: job 'etl' endpoint 'fetch'"


def parse(text: str) -> list[JobDeclaration]:
    return parse_declarations(text, "jobs.yaml", ALLOWED, ENV)


def error_of(text: str) -> str:
    with pytest.raises(InvalidConfig) as caught:
        parse(text)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_a_valid_file_becomes_declarations() -> None:
    [declaration] = parse(VALID)

    assert declaration.job.name == "etl"
    assert declaration.job.description == "nightly pipeline"
    assert declaration.job.planner_mode is PlannerMode.OFF  # YAML 1.1 would have read False
    fetch, nightly = declaration.endpoints
    assert fetch.url == "http://127.0.0.1:8080/etl/fetch"
    assert fetch.headers == {"Authorization": "Bearer s3cret"}
    assert fetch.schedule == Schedule(interval_seconds=90.0)
    assert (fetch.min_interval_seconds, fetch.max_interval_seconds) == (10.0, 3600.0)
    assert (fetch.timeout_seconds, fetch.max_response_bytes) == (5.0, 2000)
    assert fetch.planner_mode is None
    assert nightly.schedule == Schedule(cron="0 3 * * *", timezone="Europe/Paris")
    assert (nightly.method, nightly.body) == ("POST", {"since": "yesterday"})
    assert nightly.planner_mode is PlannerMode.REVIEW


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ('"0 3 * * *"', '"0 3 * *"', "endpoint 'nightly' field 'cron': invalid schedule"),
        ('"0 3 * * *"', '"0 99 * * *"', "endpoint 'nightly' field 'cron': invalid schedule"),
        ("Europe/Paris", "Mars/Olympus", "field 'timezone': invalid schedule 'Mars/Olympus'"),
        ("interval: 1m30s", "interval: 0", "field 'interval': invalid schedule"),
        ("interval: 1m30s", "interval: -5s", "field 'interval': '-5s' is not a duration"),
        ("interval: 1m30s", "interval: soon", "field 'interval': 'soon' is not a duration"),
        ("min_interval: 10s", "min_interval: 2h", "field 'min_interval': invalid schedule"),
        ("interval: 1m30s", "interval: 1m\n        cron: '* * * * *'", "field 'cron': set exactly"),
        ("        interval: 1m30s\n", "", "endpoint 'fetch' field 'cron': set exactly one of"),
        ("interval: 1m30s", "interval: 1m\n        timezone: UTC", "field 'timezone': a time zone"),
        ("${BASE}/etl/fetch", "ftp://93.184.216.34/x", "field 'url': refused URL"),
        ("${BASE}/etl/fetch", "http://169.254.169.254/latest", "field 'url': refused URL"),
        ("${BASE}/etl/fetch", "http://10.0.0.7/", "field 'url': refused URL"),
        ("${BASE}/etl/fetch", "${MISSING}/x", "field 'url': environment variable MISSING"),
        ("timeout: 5s", "timeout: 0", "field 'timeout': Input should be greater than 0"),
        ("max_response_size: 2KB", "max_response_size: lots", "field 'max_response_size'"),
        ("interval: 1m30s", "interval: 1m30s\n        retries: 3", "'retries': unknown"),
        ("name: nightly", "name: fetch", "endpoint 'fetch' field 'name': duplicate endpoint"),
        ("name: fetch", "name: a/b", "endpoint 'a/b' field 'name': names are letters"),
        ("method: post", "method: FETCH", "endpoint 'nightly' field 'method': Input should"),
        ("planner_mode: off", "planner_mode: often", "job 'etl' field 'planner_mode'"),
        ("headers: {Authorization", "headers: {X-Count: 3, Authorization", "'headers.X-Count'"),
    ],
)
def test_each_bad_input_is_one_line_naming_file_job_endpoint_and_field(
    old: str, new: str, expected: str
) -> None:
    assert old in VALID
    message = error_of(VALID.replace(old, new, 1))

    assert message.startswith("jobs.yaml: job 'etl' ")
    assert expected in message


def test_a_field_error_names_the_endpoint_it_belongs_to() -> None:
    message = error_of(VALID.replace("interval: 1m30s", "interval: 0"))

    assert message.startswith(f"{ENDPOINT} field 'interval': ")


def test_an_unnamed_job_is_named_by_its_position() -> None:
    text = VALID + "  - description: no name\n    endpoints: []\n"

    assert error_of(text).startswith("jobs.yaml: job #2 field 'name': Field required")


def test_duplicate_job_names_are_refused() -> None:
    second = VALID.split("jobs:\n", 1)[1]

    assert "job 'etl' field 'name': duplicate job name 'etl'" in error_of(VALID + second)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("jobs:\n  - name: etl: x\n", "jobs.yaml:2: YAML syntax error"),
        ("jobs:\n\t- name: etl\n", "jobs.yaml:2: YAML syntax error"),
        ("jobs: []\njobs: []\n", "jobs.yaml:2: YAML syntax error: duplicate key 'jobs'"),
    ],
)
def test_yaml_errors_name_file_and_line(text: str, expected: str) -> None:
    assert error_of(text).startswith(expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "jobs.yaml: expected a mapping with a 'jobs' list"),
        ("- a\n- b\n", "jobs.yaml: expected a mapping with a 'jobs' list"),
        ("jobs: []\n", "jobs.yaml: field 'jobs': List should have at least 1 item"),
    ],
)
def test_documents_without_jobs_are_refused(text: str, expected: str) -> None:
    assert error_of(text).startswith(expected)


def test_unknown_top_level_fields_are_refused() -> None:
    assert error_of(VALID + "version: 2\n") == "jobs.yaml: field 'version': unknown field"


def test_allowed_networks_open_private_addresses() -> None:
    text = VALID.replace("${BASE}/etl/fetch", "http://10.0.0.7/")

    [declaration] = parse_declarations(text, "jobs.yaml", ["10.0.0.0/8"], ENV)

    assert declaration.endpoints[0].url == "http://10.0.0.7/"


def test_a_missing_file_is_one_line_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"

    with pytest.raises(InvalidConfig, match=r"nope\.yaml: cannot read: No such file"):
        load_declarations(missing, ALLOWED, ENV)


def test_the_bundled_example_is_valid() -> None:
    declarations = load_declarations(
        example_jobs_file(), ALLOWED, {"SIMULATOR_URL": "http://127.0.0.1:9000"}
    )

    endpoints = {
        f"{d.job.name}/{spec.name}": spec.url for d in declarations for spec in d.endpoints
    }
    assert sorted({ref.split("/")[0] for ref in endpoints}) == [
        "billing",
        "etl",
        "flash-sale",
        "health",
        "queue",
    ]
    assert all(url.startswith("http://127.0.0.1:9000/") for url in endpoints.values())
    assert endpoints["flash-sale/fraud_score"].endswith("/fraud/score")


@pytest.mark.parametrize(
    ("value", "seconds"),
    [(30, 30.0), (2.5, 2.5), ("45", 45.0), ("250ms", 0.25), ("5m", 300.0), ("1h30m", 5400.0)],
)
def test_durations(value: object, seconds: float) -> None:
    assert parse_duration(value) == seconds


@pytest.mark.parametrize("value", [True, "5 parsecs", "m", None, [5]])
def test_non_durations_are_refused(value: object) -> None:
    with pytest.raises(ValueError, match="is not a duration"):
        parse_duration(value)


@pytest.mark.parametrize(
    ("value", "size"), [(512, 512), ("100KB", 100_000), ("2MiB", 2 * 1024**2), ("10 b", 10)]
)
def test_sizes(value: object, size: int) -> None:
    assert parse_size(value) == size


@pytest.mark.parametrize(
    ("value", "networks"),
    [
        ("127.0.0.1/32, 10.0.0.0/8", ["127.0.0.1/32", "10.0.0.0/8"]),
        ('["192.168.1.7"]', ["192.168.1.7/32"]),
        ("", []),
    ],
)
def test_allowed_networks_come_comma_separated_or_as_json(
    monkeypatch: pytest.MonkeyPatch, value: str, networks: list[str]
) -> None:
    monkeypatch.setenv("CRONPILOT_ALLOWED_NETWORKS", value)

    assert load_settings().allowed_networks == networks


def test_a_bad_setting_names_its_variable_and_not_its_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CRONPILOT_LEASE_SECONDS", "0")
    monkeypatch.setenv("CRONPILOT_SECRET_KEY", "do-not-print-me")

    with pytest.raises(InvalidConfig) as caught:
        load_settings()

    assert str(caught.value) == "CRONPILOT_LEASE_SECONDS: Input should be greater than 0"
    assert "do-not-print-me" not in repr(load_settings(lease_seconds=5))


@pytest.mark.parametrize(
    ("given", "used"),
    [
        ("sqlite+aiosqlite:///./cronpilot.db", "sqlite+aiosqlite:///./cronpilot.db"),
        ("sqlite:///data/x.db", "sqlite+aiosqlite:///data/x.db"),
        ("postgresql+asyncpg://u:pw@db:5433/app", "postgresql+asyncpg://u:pw@db:5433/app"),
        ("postgresql://u:pw@db/app", "postgresql+asyncpg://u:pw@db/app"),
        (
            "postgres://u:p%40ss@db/app?sslmode=require",
            "postgresql+asyncpg://u:p%40ss@db/app?ssl=require",
        ),
        (
            "postgresql://u:pw@pool:6432/app?pgbouncer=true",
            "postgresql+asyncpg://u:pw@pool:6432/app?pgbouncer=true",
        ),
    ],
)
def test_database_urls_get_the_async_driver(given: str, used: str) -> None:
    assert load_settings(database_url=given).database_url == used
    assert load_settings(database_listen_url=given).database_listen_url == used


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("garbage", "not a database URL"),
        ("postgresql://u:hunter2@db:port/app", "not a database URL"),
        ("mysql://u:hunter2@db/app", "'mysql' is not supported"),
        ("postgresql+psycopg2://u:hunter2@db/app", "driver 'psycopg2' is not supported"),
        ("sqlite+pysqlite:///x.db?hunter2", "driver 'pysqlite' is not supported"),
        ("postgresql://u:hunter2@db:70000/app", "port 70000 is out of range"),
        ("postgresql://u:hunter2@db/app?options=-c%20x", "query parameter 'options'"),
        ("postgresql://u:hunter2@db/app?sslmode=hunter2", "ssl/sslmode must be one of"),
        ("postgresql://u:hunter2@db/app?pgbouncer=yes", "pgbouncer must be true or false"),
    ],
)
def test_an_unusable_database_url_is_one_line_without_the_password(url: str, reason: str) -> None:
    with pytest.raises(InvalidConfig) as caught:
        load_settings(database_url=url)

    message = str(caught.value)
    assert message.startswith("CRONPILOT_DATABASE_URL: ")
    assert reason in message
    assert "hunter2" not in message


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("Bearer ${TOKEN}", r"Bearer ${TOKEN}\r\nX-Admin: 1", "'headers.Authorization': the value"),
        (
            "Bearer ${TOKEN}",
            r"Bearer ${TOKEN}\n",
            "'headers.Authorization': the value holds U+000A",
        ),
        (
            "Bearer ${TOKEN}",
            r"Bearer \0${TOKEN}",
            "'headers.Authorization': the value holds U+0000",
        ),
        (
            "Bearer ${TOKEN}",
            r"Bearer \x7f${TOKEN}",
            "'headers.Authorization': the value holds U+007F",
        ),
        ("{Authorization:", r'{"X-A\r\nX-B": v, Authorization:', r"'headers.X-A\r\nX-B': a header"),
        ("{Authorization:", '{"X A": v, Authorization:', "'headers.X A': a header name is"),
        ("{Authorization:", '{"X:A": v, Authorization:', "'headers.X:A': a header name is"),
        ("{Authorization:", '{"": v, Authorization:', "'headers.': a header name is"),
        ("{Authorization:", "{authorization: v, Authorization:", "duplicate header"),
        ("${BASE}/etl/fetch", r'"${BASE}/etl\r\nHost: x"', "field 'url': holds U+000D"),
        ("{since: yesterday}", "{since: .nan}", "'body': cannot be stored: $.since: nan is not"),
        ("{since: yesterday}", "[1, -.inf]", "'body': cannot be stored: $[1]: -inf is not"),
        (
            "{since: yesterday}",
            r'{since: "a\0b"}',
            "'body': cannot be stored: $.since: contains U+",
        ),
        ("{since: yesterday}", r'"\ud800"', "'body': cannot be stored: $: contains U+D800"),
        ("{since: yesterday}", r'{"\0": 1}', "'body': cannot be stored: $ key: contains U+0000"),
        ("{since: yesterday}", "{1: one}", "'body': cannot be stored: $: key 1 is not a string"),
        ("{since: yesterday}", "!!binary aGk=", "'body': cannot be stored: $: bytes is not"),
        ("description: the big one", r'description: "a\0b"', "'description': cannot be stored"),
        ("timeout: 5s", "timeout: .inf", "field 'timeout': inf is not a duration"),
        ("timeout: 5s", f"timeout: {'9' * 400}", "field 'timeout': "),
    ],
)
def test_values_that_could_not_be_sent_or_stored_are_refused(
    old: str, new: str, expected: str
) -> None:
    assert old in VALID
    message = error_of(VALID.replace(old, new, 1))

    assert message.startswith("jobs.yaml: job 'etl' ")
    assert expected in message
    assert "s3cret" not in message


def test_header_names_may_use_every_token_character() -> None:
    text = VALID.replace("{Authorization:", "{X-Custom_Header.v2+~: ok, Authorization:")

    [declaration] = parse(text)

    assert declaration.endpoints[0].headers["X-Custom_Header.v2+~"] == "ok"


def test_dates_in_a_body_stay_strings() -> None:
    [declaration] = parse(VALID.replace("{since: yesterday}", "{since: 2024-01-01}"))

    assert declaration.endpoints[1].body == {"since": "2024-01-01"}


def test_a_refused_url_is_quoted_with_its_secrets_masked() -> None:
    message = error_of(VALID.replace("${BASE}/etl/fetch", "http://10.0.0.7/x?page=2&token=hunter2"))

    assert "refused URL 'http://10.0.0.7/x?page=2&token=****'" in message
    assert "hunter2" not in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "jobs: &j [*j]\n",
            "jobs.yaml: job #1 field '[0][0][0][0]': nested more than 64 levels deep",
        ),
        ("jobs: " + "[" * 5000 + "]" * 5000 + "\n", "jobs.yaml: nested too deeply"),
    ],
)
def test_documents_nested_without_end_are_refused(text: str, expected: str) -> None:
    assert error_of(text) == expected


def test_aliases_cannot_expand_a_document_without_bound() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]

    message = error_of("\n".join([*lines, "jobs: []", ""]))

    assert message == "jobs.yaml: more than 100000 values (nested YAML aliases?)"


LONG = 100_000


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("${BASE}/etl/fetch", "x" * LONG, "field 'url': refused URL 'xxxx"),
        ("${BASE}/etl/fetch", "${" + "A" * LONG + "}", "environment variable AAAA"),
        ("interval: 1m30s", "interval: " + "soon" * (LONG // 4), "field 'interval': 'soonsoon"),
        ("max_response_size: 2KB", "max_response_size: " + "b" * LONG, "'max_response_size': 'bb"),
        ("name: fetch", "name: " + "a/" * (LONG // 2), "endpoint 'a/a/a/"),
        # A YAML key is at most 1,024 characters long.
        ("{Authorization:", '{"' + "X:" * 500 + '": v, Authorization:', "'headers.X:X:"),
        ("{since: yesterday}", "{" + "k" * 1000 + ": .nan}", "'body': cannot be stored: $.kkk"),
    ],
    ids=["url", "variable", "duration", "size", "name", "header", "body key"],
)
def test_a_long_value_is_quoted_cut_with_its_length(old: str, new: str, expected: str) -> None:
    assert old in VALID
    message = error_of(VALID.replace(old, new, 1))

    assert expected in message
    assert " chars)" in message
    assert len(message) < 400


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        ("100000000000000000000", "Input should be less than or equal to 1073741824"),
        ("1025MiB", "Input should be less than or equal to 1073741824"),
        (f"{'9' * 400}KB", "is not a size"),
    ],
    ids=["20 digits", "over 1 GiB", "infinite"],
)
def test_a_response_size_beyond_one_gib_is_refused(size: str, expected: str) -> None:
    message = error_of(VALID.replace("max_response_size: 2KB", f"max_response_size: {size}"))

    assert message.startswith(f"{ENDPOINT} field 'max_response_size': ")
    assert expected in message


def test_a_response_size_of_one_gib_is_accepted() -> None:
    [declaration] = parse(VALID.replace("max_response_size: 2KB", "max_response_size: 1024MiB"))

    assert declaration.endpoints[0].max_response_bytes == 1024**3


def test_an_integer_python_cannot_read_is_one_line() -> None:
    message = error_of(VALID.replace("{since: yesterday}", "9" * 5000))

    assert message == "jobs.yaml:18: YAML syntax error: an integer of more than 4,300 digits"


def test_a_file_over_the_limit_is_refused(tmp_path: Path) -> None:
    large = tmp_path / "large.yaml"
    large.write_text(VALID + "#" * MAX_FILE_BYTES, encoding="utf-8")

    with pytest.raises(InvalidConfig, match=r"large\.yaml: larger than 10,000,000 bytes"):
        load_declarations(large, ALLOWED, ENV)


def test_an_endless_input_is_read_only_up_to_the_limit(tmp_path: Path) -> None:
    """A pipe that would never end (`-f /dev/zero`, a stream): the writer finds it closed soon
    after the limit, instead of the reader keeping everything it sends."""
    pipe = tmp_path / "endless"
    os.mkfifo(pipe)
    chunk, sent = b"#" * 1_000_000, []

    def write() -> None:
        with pipe.open("wb") as stream:
            try:
                for _ in range(5 * MAX_FILE_BYTES // len(chunk)):
                    stream.write(chunk)
                    sent.append(len(chunk))
            except BrokenPipeError:
                return

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    with pytest.raises(InvalidConfig, match="larger than 10,000,000 bytes"):
        load_declarations(pipe, ALLOWED, ENV)
    writer.join(timeout=30)

    assert sum(sent) < 2 * MAX_FILE_BYTES
