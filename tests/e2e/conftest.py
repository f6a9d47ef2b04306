"""The CLI as a user runs it: a separate process with its own environment and database."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cronpilot.adapters.crypto import load_or_create_key

# Helpers whose asserts are a test's, and say as much when they fail.
pytest.register_assert_rewrite("tests.e2e.ten_minutes")

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

    def apply_in(self, directory: Path, text: str, expect: int = 0) -> str:
        """`cronpilot apply` of `text` written to `directory/jobs.yaml`: its stdout, or its stderr
        when it is expected to fail."""
        path = directory / "jobs.yaml"
        path.write_text(text, encoding="utf-8")
        done = self("apply", "-f", str(path), expect=expect)
        return done.stdout if expect == 0 else done.stderr

    def secret_key(self) -> str:
        """The key of the CLI's key file, made now when no command has sealed a secret yet
        (one that only reads makes none)."""
        return load_or_create_key(self.home / "secret.key")

    def json(self, *args: str) -> Any:
        return json.loads(self(*args, "--json").stdout)

    def on_terminal(self, *args: str, timeout: float = CLI_TIMEOUT) -> str:
        """What `cronpilot ARGS` prints when its stdout is a terminal (a pseudo-terminal here;
        its width is `COLUMNS`), styles left out; it must succeed."""
        reader, writer = pty.openpty()
        with subprocess.Popen(
            [sys.executable, "-m", "cronpilot.adapters.cli.entry", *args],
            cwd=self.home,
            env=self.env,
            stdout=writer,
            stderr=subprocess.PIPE,
        ) as process:
            os.close(writer)
            shown = bytearray()
            while True:
                try:
                    chunk = os.read(reader, 65536)
                except OSError:  # EIO: the process closed the terminal's other end
                    break
                if not chunk:
                    break
                shown += chunk
            os.close(reader)
            assert process.wait(timeout) == 0, process.stderr.read() if process.stderr else ""
        text = shown.decode().replace("\r\n", "\n")
        return _STYLE.sub("", text)


_STYLE = re.compile(r"\x1b\[[0-9;]*m")
"""The escapes that set a style (bold headers) on a terminal."""


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
