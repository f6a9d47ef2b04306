"""The `cronpilot …` examples of the README and the manual (`docs/`) work as written: each one,
taken from a code block, parses with the real command tree (arguments, options, their types and
choices) down to the command it names, whose work is replaced by a recorder; none elides a value
(`3f2c…`)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer

from cronpilot.adapters.cli.main import build_app

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _examples() -> list[list[str]]:
    found = []
    for page in PAGES:
        for block in re.findall(r"```[a-z]*\n(.*?)```", page.read_text(encoding="utf-8"), re.S):
            for line in block.splitlines():
                command = line.strip().removeprefix("$ ")
                if command.startswith("cronpilot "):
                    found.append(shlex.split(command, comments=True))
    return found


EXAMPLES = _examples()


def _recording(command: Any, reached: list[str], path: str) -> None:
    """Replace the work of every command under `command`, groups included (`planner` runs the
    planner when called alone), with noting its path in `reached`."""
    for name, sub in getattr(command, "commands", {}).items():
        _recording(sub, reached, f"{path} {name}")
    command.callback = lambda **_: reached.append(path)


def test_the_readme_has_examples_to_check() -> None:
    assert len(EXAMPLES) >= 10


@pytest.mark.parametrize("example", EXAMPLES, ids=" ".join)
def test_a_readme_example_parses_as_written(example: list[str]) -> None:
    assert not [arg for arg in example if "…" in arg], "an elided value cannot be typed"
    reached: list[str] = []
    command = typer.main.get_command(build_app())
    _recording(command, reached, "cronpilot")
    command.main(args=example[1:], prog_name="cronpilot", standalone_mode=False)
    named = [arg for arg in example if not arg.startswith("-")]
    assert reached and " ".join(named).startswith(reached[-1])


def test_a_mistyped_example_would_be_caught() -> None:
    command = typer.main.get_command(build_app())
    _recording(command, [], "cronpilot")
    with pytest.raises(typer.TyperException):
        command.main(
            args=["proposals", "list", "--status", "waiting"],
            prog_name="cronpilot",
            standalone_mode=False,
        )
