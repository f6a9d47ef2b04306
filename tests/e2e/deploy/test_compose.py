"""deploy/compose.yaml: PostgreSQL, the schema upgrade first, two schedulers, a planner and the
API, on this release's image, each running a command cronpilot accepts."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy.engine import make_url

from tests.e2e.deploy.cli import accepts

ROOT = Path(__file__).resolve().parents[3]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
WORKERS = ("scheduler-1", "scheduler-2", "planner")


@pytest.fixture(scope="module")
def services() -> dict[str, dict[str, Any]]:
    # PyYAML resolves the file's anchors and merge keys (<<) as compose does.
    found: dict[str, dict[str, Any]] = yaml.safe_load(
        (ROOT / "deploy" / "compose.yaml").read_text()
    )["services"]
    return found


def _cronpilot(services: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {name: service for name, service in services.items() if name != "postgres"}


def test_postgres_two_schedulers_a_planner_and_the_api(services: dict[str, dict[str, Any]]) -> None:
    commands = {name: service["command"][0] for name, service in _cronpilot(services).items()}

    assert set(services) == {"postgres", "db-upgrade", *WORKERS, "api"}
    assert commands == {
        "db-upgrade": "db",
        "scheduler-1": "scheduler",
        "scheduler-2": "scheduler",
        "planner": "planner",
        "api": "serve",
    }


def test_every_service_runs_this_release_s_image_with_a_real_command(
    services: dict[str, dict[str, Any]],
) -> None:
    for service in _cronpilot(services).values():
        assert service["image"] == f"${{CRONPILOT_IMAGE:-localhost/cronpilot:{VERSION}}}"
        assert accepts(service["command"]), service["command"]


def test_the_schema_is_upgraded_once_postgres_is_up_and_before_any_worker(
    services: dict[str, dict[str, Any]],
) -> None:
    assert services["db-upgrade"]["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    assert services["db-upgrade"]["restart"] == "no"
    for name in (*WORKERS, "api"):
        assert services[name]["depends_on"] == {
            "db-upgrade": {"condition": "service_completed_successfully"}
        }


def test_every_process_reaches_the_compose_database(services: dict[str, dict[str, Any]]) -> None:
    database = services["postgres"]["environment"]
    for service in _cronpilot(services).values():
        url = make_url(service["environment"]["CRONPILOT_DATABASE_URL"])
        assert (url.host, url.username, url.database) == (
            "postgres",
            database["POSTGRES_USER"],
            database["POSTGRES_DB"],
        )
        assert "CRONPILOT_SECRET_KEY" in service["environment"]


def test_each_worker_has_a_name_of_its_own(services: dict[str, dict[str, Any]]) -> None:
    names = [services[name]["environment"]["CRONPILOT_WORKER_ID"] for name in WORKERS]

    assert names == list(WORKERS)


def test_the_api_health_check_asks_the_api_s_own_port(services: dict[str, dict[str, Any]]) -> None:
    api = services["api"]
    port = api["command"][api["command"].index("--port") + 1]

    assert api["environment"]["CRONPILOT_HEALTHCHECK_URL"] == f"http://127.0.0.1:{port}/healthz"
    assert api["ports"] == [f"127.0.0.1:{port}:{port}"]
