"""The CLI as a user runs it: a separate process with its own environment and database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLI_TIMEOUT = 60


@dataclass(frozen=True)
class Cli:
    """`cronpilot` against one database, run in `home` with only the variables it is given."""

    home: Path
    env: dict[str, str]

    def __call__(
        self, *args: str, expect: int = 0, timeout: float = CLI_TIMEOUT
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "cronpilot.adapters.cli.entry", *args],
            cwd=self.home,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        assert done.returncode == expect, (
            f"cronpilot {' '.join(args)} exited {done.returncode}, expected {expect}\n"
            f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
        )
        return done

    def json(self, *args: str) -> Any:
        return json.loads(self(*args, "--json").stdout)


def make_cli(home: Path, database_url: str, **extra_env: str) -> Cli:
    env = {name: value for name, value in os.environ.items() if not name.startswith("CRONPILOT_")}
    env.update(
        HOME=str(home),
        # The working tree's code, whatever an installed copy of the package points at.
        PYTHONPATH=str(ROOT),
        CRONPILOT_DATABASE_URL=database_url,
        CRONPILOT_SECRET_KEY_FILE=str(home / "secret.key"),
        **extra_env,
    )
    return Cli(home, env)


@pytest.fixture
def cli_for(tmp_path: Path) -> Callable[..., Cli]:
    """`cli_for(url, **env)`: a CLI bound to a database URL, with extra environment."""

    def bind(database_url: str, **extra_env: str) -> Cli:
        return make_cli(tmp_path, database_url, **extra_env)

    return bind
