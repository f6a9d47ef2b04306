"""jobs.yaml DAG fields: depends_on, only_if_changed and templates become specs, and every
mistake is one line naming file, job, endpoint and field."""

from __future__ import annotations

import pytest

from cronpilot.adapters.jobs_file import parse_declarations
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.model import Schedule

PIPELINE = """\
jobs:
  - name: etl
    endpoints:
      - name: fetch
        url: https://93.184.216.34/fetch
        interval: 30s
      - name: transform
        url: https://93.184.216.34/transform?batch={{ fetch.batch_id }}
        depends_on: [fetch]
        only_if_changed: true
      - name: load
        url: https://93.184.216.34/load
        method: POST
        body: {rows: "{{ transform.rows }}"}
        depends_on: [transform]
"""


def _error(text: str) -> str:
    with pytest.raises(InvalidConfig) as caught:
        parse_declarations(text, "jobs.yaml", [])
    return str(caught.value)


def test_a_pipeline_becomes_specs_with_dependants_and_no_schedule_of_their_own() -> None:
    [declaration] = parse_declarations(PIPELINE, "jobs.yaml", [])
    fetch, transform, load = declaration.endpoints
    assert (fetch.depends_on, fetch.dependants) == ((), ("transform",))
    assert (transform.depends_on, transform.dependants, transform.only_if_changed) == (
        ("fetch",),
        ("load",),
        True,
    )
    assert load.schedule == Schedule()
    assert load.body == {"rows": "{{ transform.rows }}"}


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "depends_on: [transform]",
            "depends_on: [trans]",
            "jobs.yaml: job 'etl' endpoint 'load' field 'depends_on': unknown upstream 'trans'",
        ),
        (
            "interval: 30s",
            "depends_on: [load]",
            "jobs.yaml: job 'etl' endpoint 'fetch' field 'depends_on': "
            "dependency cycle fetch -> transform -> load -> fetch",
        ),
        (
            'body: {rows: "{{ transform.rows }}"}',
            'body: {rows: "{{ fetch.rows }}"}',
            "jobs.yaml: job 'etl' endpoint 'load' field 'body.rows': template "
            "{{ fetch.rows }} names 'fetch', which is not in depends_on",
        ),
        (
            "depends_on: [transform]",
            "depends_on: [transform]\n        interval: 5s",
            "jobs.yaml: job 'etl' endpoint 'load' field 'interval': an endpoint with depends_on "
            "runs after its upstreams",
        ),
        (
            "interval: 30s",
            "interval: 30s\n        only_if_changed: true",
            "jobs.yaml: job 'etl' endpoint 'fetch' field 'only_if_changed': applies to an "
            "endpoint with depends_on only",
        ),
        (
            "batch={{ fetch.batch_id }}",
            "batch={{ fetch }}",
            "jobs.yaml: job 'etl' endpoint 'transform' field 'url': template {{ fetch }}: names "
            "no field of 'fetch'",
        ),
        (
            "batch={{ fetch.batch_id }}",
            "batch={{ fetch.batch id }}",
            "jobs.yaml: job 'etl' endpoint 'transform' field 'url': template "
            "{{ fetch.batch id }}: bad field path 'fetch.batch id'",
        ),
        (
            "batch={{ fetch.batch_id }}",
            "batch={{ fetch.batch_id }",
            "jobs.yaml: job 'etl' endpoint 'transform' field 'url': template {{ fetch.batch_id }: "
            "'{{' is not closed by '}}'",
        ),
        (
            'body: {rows: "{{ transform.rows }}"}',
            'body: {rows: "{ transform.rows }}"}',
            "jobs.yaml: job 'etl' endpoint 'load' field 'body.rows': template "
            "{ transform.rows }}: '}}' is not opened by '{{'",
        ),
        (
            'method: POST\n        body: {rows: "{{ transform.rows }}"}',
            'method: POST\n        headers: {X-Rows: "{{ transform }}"}',
            "jobs.yaml: job 'etl' endpoint 'load' field 'headers.X-Rows': template "
            "{{ transform }}: names no field of 'transform'",
        ),
        (
            "interval: 30s",
            "interval: 30s\n        body: {since: '{{ fetch.rows.0 }}'}",
            "jobs.yaml: job 'etl' endpoint 'fetch' field 'body.since': template "
            "{{ fetch.rows[0] }} names 'fetch', which is not in depends_on",
        ),
        (
            "interval: 30s",
            "interval: 30s\n        change_ignores: [checked_at, 'meta.request id']",
            "jobs.yaml: job 'etl' endpoint 'fetch' field 'change_ignores[1]': bad field path "
            "'meta.request id': keys joined by dots, positions in brackets, e.g. rows[0].id",
        ),
        (
            "interval: 30s",
            "interval: 30s\n        change_ignores: [rows.0.at, 'rows[0].at']",
            "jobs.yaml: job 'etl' endpoint 'fetch' field 'change_ignores[1]': rows[0].at is "
            "listed twice",
        ),
    ],
)
def test_each_dag_mistake_is_one_line_naming_where(old: str, new: str, expected: str) -> None:
    assert old in PIPELINE
    assert _error(PIPELINE.replace(old, new, 1)).startswith(expected)


def test_an_upstream_a_template_cannot_name_is_refused_saying_why() -> None:
    text = PIPELINE.replace("- name: fetch", "- name: fetch.v2").replace(
        "depends_on: [fetch]", "depends_on: [fetch.v2]"
    )
    assert _error(text.replace("{{ fetch.batch_id }}", "{{ fetch.v2.batch_id }}")) == (
        "jobs.yaml: job 'etl' endpoint 'transform' field 'query.batch': template "
        "{{ fetch.v2.batch_id }} cannot name 'fetch.v2': a template's first key is letters, "
        "digits, '_' and '-', so it reads 'v2.batch_id' of 'fetch'; rename the upstream endpoint"
    )


def test_change_ignores_are_kept_written_the_one_way() -> None:
    text = PIPELINE.replace(
        "interval: 30s", "interval: 30s\n        change_ignores: [checked_at, rows.0.at]"
    )
    fetch = parse_declarations(text, "jobs.yaml", [])[0].endpoints[0]
    assert fetch.change_ignores == ("checked_at", "rows[0].at")
