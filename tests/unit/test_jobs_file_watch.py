"""jobs.yaml `notify.missed_after` and `notify.late_after` (issue 25): read on a job and its
endpoints, refused with one line when wrong, exported and diffed like every other setting."""

from __future__ import annotations

import pytest

from cronpilot.adapters.jobs_export import export_document
from cronpilot.adapters.jobs_file import parse_declarations
from cronpilot.domain.declaration_diff import FieldChange, FieldOutcome, planned_changes
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.model import EndpointSpec
from cronpilot.domain.ports import JobDeclaration

HOOK = "https://hooks.example.com/ops"
JOBS = f"""\
jobs:
  - name: etl
    notify: {{urls: ["{HOOK}"], missed_after: 10m, late_after: 30s}}
    endpoints:
      - name: fetch
        url: https://api.example.com/fetch
        interval: 1m
      - name: report
        url: https://api.example.com/report
        cron: "0 6 * * *"
        notify: {{missed_after: 1h}}
      - name: load
        url: https://api.example.com/load
        depends_on: [fetch]
"""
WHERE = "jobs.yaml: job 'etl'"


def _parse(text: str = JOBS) -> list[JobDeclaration]:
    return parse_declarations(text, "jobs.yaml", [], {}, floor_seconds=1.0)


def _specs(text: str = JOBS) -> dict[str, EndpointSpec]:
    [declaration] = _parse(text)
    return {spec.name: spec for spec in declaration.endpoints}


def _error(text: str) -> str:
    with pytest.raises(InvalidConfig) as caught:
        _parse(text)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_a_jobs_watch_applies_to_its_scheduled_endpoints_which_may_replace_it() -> None:
    specs = _specs()

    watched = {
        name: (spec.missed_after_seconds, spec.late_after_seconds) for name, spec in specs.items()
    }

    assert watched == {"fetch": (600, 30), "report": (3600, 30), "load": (None, None)}
    assert specs["report"].notify == (HOOK,)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            ("missed_after: 1h", "missed_after: 0s"),
            "endpoint 'report' field 'notify.missed_after': must be more than 0, e.g. '10m'",
        ),
        (
            ("missed_after: 1h", "missed_after: -5m"),
            "endpoint 'report' field 'notify.missed_after': must be more than 0, e.g. '10m'",
        ),
        (
            ("late_after: 30s", "late_after: soon"),
            "field 'notify.late_after': 'soon' is not a duration (seconds, or e.g. '30s', "
            "'5m', '1h30m')",
        ),
        (
            ("late_after: 30s", "late_after: 4000d"),
            "field 'notify.late_after': Input should be less than or equal to 315360000",
        ),
        (
            ("missed_after: 1h", "missed_before: 1h"),
            "endpoint 'report' field 'notify.missed_before': unknown field",
        ),
        (
            ("depends_on: [fetch]", "depends_on: [fetch]\n        notify: {late_after: 1m}"),
            "endpoint 'load' field 'notify.late_after': an endpoint with depends_on has no "
            "slots to miss: it runs after its upstreams",
        ),
        (
            ("interval: 1m", "interval: 1m\n        jitter: 40s"),
            "endpoint 'fetch' field 'jitter': late_after (30s) must be more than the jitter "
            "(40s), which delays calls on purpose",
        ),
    ],
    ids=["zero", "negative", "not a duration", "too long", "unknown key", "dependant", "jitter"],
)
def test_bad_watch_settings_are_one_line_naming_the_field(
    change: tuple[str, str], expected: str
) -> None:
    assert _error(JOBS.replace(*change, 1)) == f"{WHERE} {expected}"


def test_the_watch_is_exported_and_reads_back_the_same() -> None:
    declared = _parse()

    exported = export_document(declared, with_secrets=True)

    assert "missed_after: 600" in exported
    assert "late_after: 30" in exported
    [again] = _parse(exported)
    assert again.endpoints == declared[0].endpoints
    assert export_document([again], with_secrets=True) == exported


def test_a_dry_run_shows_a_watch_changed_and_removed() -> None:
    [stored] = _parse()
    changed = JOBS.replace("missed_after: 1h", "missed_after: 2h").replace(
        ", missed_after: 10m, late_after: 30s", ""
    )

    changes = planned_changes(
        _parse(changed), {"etl": stored.job}, {f"etl/{s.name}": s for s in stored.endpoints}
    )

    by_ref = {change.ref: change.fields for change in changes}
    assert by_ref["etl/report"] == (
        FieldChange("late_after_seconds", FieldOutcome.REMOVED, old=30.0),
        FieldChange("missed_after_seconds", FieldOutcome.CHANGED, old=3600.0, new=7200.0),
    )
    assert by_ref["etl/fetch"] == (
        FieldChange("late_after_seconds", FieldOutcome.REMOVED, old=30.0),
        FieldChange("missed_after_seconds", FieldOutcome.REMOVED, old=600.0),
    )
