"""deploy/systemd/: every unit passes `systemd-analyze verify` (with the install's
/opt/cronpilot/bin/cronpilot replaced by this checkout's, which verify wants to find), or parses
where systemd is not installed; every ExecStart is a command cronpilot accepts."""

from __future__ import annotations

import configparser
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.deploy.cli import CRONPILOT, accepts

ROOT = Path(__file__).resolve().parents[3]
UNITS = sorted((ROOT / "deploy" / "systemd").glob("*.service"))
INSTALLED = "/opt/cronpilot/bin/cronpilot"


def _unit(path: Path) -> configparser.ConfigParser:
    # systemd keys are case-sensitive and may repeat within a section; these units do not.
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(path.read_text())
    return parser


def test_the_units_are_the_upgrade_and_one_per_process() -> None:
    assert [unit.name for unit in UNITS] == [
        "cronpilot-api.service",
        "cronpilot-db-upgrade.service",
        "cronpilot-planner.service",
        "cronpilot-scheduler.service",
    ]


def test_systemd_finds_nothing_to_say(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed; the units are parsed by the tests below")
    for unit in UNITS:
        (tmp_path / unit.name).write_text(unit.read_text().replace(INSTALLED, str(CRONPILOT)))
    verified = subprocess.run(
        [analyze, "verify", *sorted(path.name for path in tmp_path.iterdir())],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert verified.returncode == 0, verified.stderr
    # Unknown keys and bad values are only warned about.
    assert verified.stderr == "", verified.stderr


@pytest.mark.parametrize("path", UNITS, ids=lambda path: path.stem)
def test_each_unit_runs_a_real_command_as_the_cronpilot_user(path: Path) -> None:
    service = _unit(path)["Service"]
    command = shlex.split(service["ExecStart"])

    assert command[0] == INSTALLED
    assert accepts(command[1:]), command
    assert (service["User"], service["Group"]) == ("cronpilot", "cronpilot")
    assert service["EnvironmentFile"] == "/etc/cronpilot/cronpilot.env"
    assert service["NoNewPrivileges"] == "yes"


@pytest.mark.parametrize("path", [unit for unit in UNITS if "db-upgrade" not in unit.name])
def test_each_process_starts_after_the_schema_upgrade(path: Path) -> None:
    unit = _unit(path)["Unit"]

    assert unit["Requires"] == "cronpilot-db-upgrade.service"
    assert "cronpilot-db-upgrade.service" in unit["After"].split()
