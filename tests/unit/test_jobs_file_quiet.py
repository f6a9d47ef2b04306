"""jobs.yaml: `quiet:` windows on a job or an endpoint, read, refused in one line, exported and
read back unchanged."""

from __future__ import annotations

import json
from datetime import date

import pytest

from cronpilot.adapters.jobs_export import export_document
from cronpilot.adapters.jobs_file import parse_declarations
from cronpilot.domain.declaration_diff import FieldChange, FieldOutcome, planned_changes
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.model import EndpointSpec
from cronpilot.domain.schedule.quiet import QuietWindow

JOBS = """\
jobs:
  - name: shop
    quiet:
      - {days: [sat, sun]}
      - {dates: [2026-12-25, 2027-01-01]}
    endpoints:
      - name: stock
        url: https://93.184.216.34/stock
        cron: "*/5 * * * *"
        timezone: Europe/Paris
        quiet:
          - {cron: "0 18 * * 1-5", for: 14h}
          - {days: mon-fri, hours: "12:00-13:30", every: 10m, timezone: UTC}
          - {hours: "22:00-24:00", action: skip}
      - name: report
        url: https://93.184.216.34/report
        interval: 1h
      - name: loud
        url: https://93.184.216.34/loud
        interval: 1h
        quiet: []
      - name: after
        url: https://93.184.216.34/after
        depends_on: [report]
"""
WHERE = "jobs.yaml: job 'shop' endpoint 'stock' field"


def parse(text: str) -> list[EndpointSpec]:
    [declaration] = parse_declarations(text, "jobs.yaml", [], {}, 1.0)
    return list(declaration.endpoints)


def error_of(quiet: str, baseline: str = 'cron: "*/5 * * * *"') -> str:
    text = f"""\
jobs:
  - name: shop
    endpoints:
      - name: stock
        url: https://93.184.216.34/stock
        {baseline}
        quiet: {quiet}
"""
    with pytest.raises(InvalidConfig) as caught:
        parse(text)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_windows_reach_the_spec_in_the_endpoints_zone_or_their_own() -> None:
    stock, report, loud, after = parse(JOBS)

    assert stock.quiet == (
        QuietWindow(timezone="Europe/Paris", cron="0 18 * * 1-5", duration_seconds=50400.0),
        QuietWindow(timezone="UTC", days=(0, 1, 2, 3, 4), hours=(720, 810), every_seconds=600.0),
        QuietWindow(timezone="Europe/Paris", hours=(1320, 1440)),
    )
    assert report.quiet == (
        QuietWindow(days=(5, 6)),
        QuietWindow(dates=(date(2026, 12, 25), date(2027, 1, 1))),
    )
    assert loud.quiet == ()
    assert after.quiet == (), "a dependant follows its upstreams"


def test_an_export_reads_back_to_the_same_windows() -> None:
    declared = parse_declarations(JOBS, "jobs.yaml", [], {}, 1.0)

    exported = export_document(declared, with_secrets=True)

    assert "for: 50400" in exported
    assert "- 2026-12-25" in exported
    again = parse_declarations(exported, "jobs.yaml", [], {}, 1.0)
    assert [d.endpoints for d in again] == [d.endpoints for d in declared]
    assert export_document(again, with_secrets=True) == exported


def test_a_dry_run_names_the_window_field_that_changes() -> None:
    [declared] = parse_declarations(JOBS, "jobs.yaml", [], {}, 1.0)
    [moved] = parse_declarations(JOBS.replace("2026-12-25", "2026-12-26"), "jobs.yaml", [], {}, 1.0)
    stored = {f"shop/{spec.name}": spec for spec in declared.endpoints}

    changes = planned_changes([moved], {"shop": declared.job}, stored)

    [report] = [change for change in changes if change.ref == "shop/report"]
    assert report.fields == (
        FieldChange("quiet[1].dates", FieldOutcome.CHANGED, ["2026-12-25", "2027-01-01"],
                    ["2026-12-26", "2027-01-01"]),
    )  # fmt: skip
    json.dumps([change.old for change in report.fields])


@pytest.mark.parametrize(
    ("quiet", "expected"),
    [
        ("[{days: [sat, funday]}]", "field 'quiet[0].days': unknown day 'funday'"),
        ("[{days: mon-fry}]", "unknown day 'fry'"),
        ('[{cron: "0 18 * * *", for: 0s}]', "field 'quiet[0].for': must be more than 0"),
        ('[{cron: "0 18 * * *", for: -1h}]', "must be more than 0"),
        ('[{cron: "0 18 * * *"}]', "field 'quiet[0].for': a cron window needs 'for'"),
        ('[{cron: "0 25 * * *", for: 1h}]', "field 'quiet[0].cron': invalid schedule"),
        ('[{hours: "18:00-18:00"}]', "last 0 or 24 hours"),
        ('[{hours: "18:00-25:00"}]', "is not a time of day"),
        ("[{days: [mon], timezone: Mars/Base}]", "unknown time zone"),
        ("[{days: [mon], every: 10m, action: skip}]", "set action: skip or every, not both"),
        ("[{timezone: UTC}]", "set cron and for, days, dates or hours"),
        (
            "[{days: mon-sun}]",
            "field 'quiet': invalid schedule 'mon,tue,wed,thu,fri,sat,sun': never ends",
        ),
        ('[{hours: "00:00-12:00"}, {hours: "12:00-24:00"}]', "never ends"),
        ('[{cron: "* * * * *", for: 2m}]', "never ends"),
        ("[{days: [sat, sun]}]", "covers every slot of the schedule"),
    ],
)
def test_bad_windows_are_refused_in_one_line(quiet: str, expected: str) -> None:
    baseline = 'cron: "0 3 * * sat"' if "covers" in expected else 'cron: "*/5 * * * *"'
    assert expected in error_of(quiet, baseline)


def test_a_dependant_of_its_own_is_told_to_quiet_its_upstreams() -> None:
    text = JOBS.replace(
        "depends_on: [report]", "depends_on: [report]\n        quiet: [{days: [sat]}]"
    )
    with pytest.raises(InvalidConfig, match="a dependant runs after its upstreams: quiet them"):
        parse(text)
