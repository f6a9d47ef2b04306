"""The project's static checks, run with the suite so that one command proves everything."""

from __future__ import annotations

import inspect
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cronpilot.domain.ports import Repositories

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = [
    "domain",
    "usecases",
    "runtime",
    "adapters",
    "scheduler",
    "planner",
    "migrations",
    "harness",
    "tests",
    "bench",
    "build_support",
    "scripts",
]


def _tool(name: str) -> str:
    beside = Path(sys.executable).with_name(name)
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed; install the dev extra: pip install -e '.[dev]'")
    return found


def _run(*args: str) -> None:
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"


def _existing(paths: list[str]) -> list[str]:
    return [p for p in paths if (ROOT / p).exists()]


def test_ruff_lint_is_clean() -> None:
    _run(_tool("ruff"), "check", *_existing(PACKAGES))


def test_ruff_format_is_clean() -> None:
    _run(_tool("ruff"), "format", "--check", *_existing(PACKAGES))


def test_every_package_is_mypy_strict_clean() -> None:
    # Strict comes from pyproject.toml's [tool.mypy], for every module of cronpilot and for the
    # memory store that the tests run beside SQLite and PostgreSQL.
    _run(_tool("mypy"), "-p", "cronpilot", "-p", "tests.support.memory_store")


def test_import_layers_hold() -> None:
    _run(_tool("lint-imports"))


def test_no_import_circle_among_the_adapters() -> None:
    # A circle loads, and changes, every module in it with every other: a CLI command's output
    # once changed the API's that way. grimp is what lint-imports reads the imports with.
    import grimp
    import networkx as nx

    graph = grimp.build_graph("cronpilot")
    ours = [m for m in graph.modules if m.startswith("cronpilot.adapters.")]
    imports = nx.DiGraph(
        (m, d)
        for m in ours
        for d in graph.find_modules_directly_imported_by(m)
        if d.startswith("cronpilot.adapters.")
    )
    circles = [sorted(c) for c in nx.strongly_connected_components(imports) if len(c) > 1]
    assert circles == []


def test_cli_api_console_and_mcp_read_through_use_cases() -> None:
    # Issue 11: the CLI and the API show what the same use cases return, never a second copy
    # of a read; a repository named on a store (`store.runs.…`) would be one. Issue 14: so do
    # the web console's pages and the MCP server's tools (which import no repository either:
    # pyproject.toml's import-linter contracts).
    repositories = [name for name, _ in inspect.getmembers(Repositories, inspect.isdatadescriptor)]
    assert "runs" in repositories
    on_a_store = re.compile(rf"\bstore\.({'|'.join(repositories)})\.")
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for folder in (
            "adapters/cli",
            "adapters/api",
            "adapters/console",
            "adapters/mcp",
            "adapters/web",
            "adapters/views",
        )
        for path in sorted((ROOT / folder).glob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if on_a_store.search(line)
    ]
    assert offenders == []


def test_tests_cited_in_the_code_exist() -> None:
    # A comment that says "proven by tests/x.py::test_y" must name a test that still exists.
    cited = re.compile(r"(tests/[\w/]+\.py)::\s*#?\s*(test_\w+)")
    missing = []
    for folder in ("domain", "usecases", "runtime", "adapters", "scheduler", "planner"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            # A citation may wrap: `tests/x/` + newline + `# y.py::test_z`.
            text = re.sub(r"([/`:])\s*\n\s*#?\s*", r"\1", path.read_text(encoding="utf-8"))
            for test_file, test in cited.findall(text):
                target = ROOT / test_file
                if not target.exists() or f"def {test}(" not in target.read_text(encoding="utf-8"):
                    missing.append(f"{path.relative_to(ROOT)}: {test_file}::{test}")
    assert missing == []


# Subjects before this commit were written before the rule; the ones after it keep it.
SHORT_SUBJECTS_SINCE = "c6d16c7e52a5a483f49dca93e189a2eddc4c54e5"
SUBJECT_LIMIT = 72


def test_commit_subjects_are_at_most_72_characters() -> None:
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    known = subprocess.run(
        [git, "cat-file", "-e", f"{SHORT_SUBJECTS_SINCE}^{{commit}}"], cwd=ROOT, check=False
    )
    if known.returncode != 0:
        pytest.skip(f"commit {SHORT_SUBJECTS_SINCE} is not in this clone (a shallow one?)")
    subjects = subprocess.run(
        [git, "log", "--no-merges", "--format=%s", f"{SHORT_SUBJECTS_SINCE}..HEAD"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert [s for s in subjects if len(s) > SUBJECT_LIMIT] == []
