"""The distribution: one namespaced package, whatever the repository's folders are called."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = (
    "domain",
    "usecases",
    "runtime",
    "adapters",
    "scheduler",
    "planner",
    "migrations",
    "harness",
)
TOP_LEVEL_IMPORT = re.compile(rf"^\s*(from|import) ({'|'.join(LAYERS)})\b", re.MULTILINE)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    (found,) = out.glob("cronpilot-*.whl")
    return found


@pytest.mark.slow
def test_the_wheel_installs_only_the_cronpilot_package(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"cronpilot"}
    # The memory store is the tests' (tests/support/memory_store), not the product's.
    assert [name for name in names if "/memory/" in name] == []
    for needed in (
        "cronpilot/domain/model.py",
        "cronpilot/adapters/cli/main.py",
        "cronpilot/adapters/examples/jobs.yaml",
        # The web console's files: no page may need a network to draw.
        "cronpilot/adapters/console/templates/endpoint.html",
        "cronpilot/adapters/console/static/console.css",
        "cronpilot/adapters/console/static/graph.js",
        "cronpilot/adapters/console/static/filters.js",
        "cronpilot/adapters/console/static/vendor/cytoscape.min.js",
        "cronpilot/adapters/console/static/vendor/cytoscape.LICENSE",
        # The API's /docs: Swagger UI from the wheel, not from a CDN.
        "cronpilot/adapters/console/static/vendor/swagger-ui-bundle.js",
        "cronpilot/adapters/console/static/vendor/swagger-ui.css",
        "cronpilot/adapters/console/static/vendor/swagger-ui.LICENSE",
        "cronpilot/migrations/alembic.ini",
        "cronpilot/migrations/env.py",
        "cronpilot/migrations/versions/0001_initial_schema.py",
        # `cronpilot demo` and `cronpilot planner eval` run from the harness.
        "cronpilot/harness/demo/command.py",
        "cronpilot/harness/exams/command.py",
        "cronpilot/harness/exams/jobs/flash-sale.yaml",
        "cronpilot/harness/simulator/server.py",
    ):
        assert needed in names


@pytest.mark.slow
def test_the_installed_wheel_runs_from_its_own_files(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", target, wheel],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert installed.returncode == 0, installed.stderr
    assert sorted(p.name for p in target.iterdir() if not p.name.endswith(".dist-info")) == [
        "bin",
        "cronpilot",
    ]
    # Run outside the checkout, the target first on the path: the editable install of the
    # checkout must not be what answers.
    probe = (
        "import cronpilot.adapters.cli.main, cronpilot.migrations as m;"
        "print(cronpilot.adapters.cli.main.__file__);print(m.__file__)"
    )
    ran = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        env={"PYTHONPATH": str(target)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert all(line.startswith(str(target)) for line in ran.stdout.splitlines())
    # The console script (`[project.scripts]`, through the entry module that pauses the
    # collector) answers as the CLI does.
    script = subprocess.run(
        [str(target / "bin" / "cronpilot"), "--help"],
        cwd=tmp_path,
        env={"PYTHONPATH": str(target)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert script.returncode == 0, script.stderr
    assert "endpoints" in script.stdout
    # A command's help is read from its installed module's source (`main._docstrings`).
    assert "Serve the HTTP API" in script.stdout


def test_no_module_imports_a_layer_by_its_folder_name() -> None:
    """`import domain` from a checkout would load a second copy of every module it reaches."""
    offenders = [
        str(path.relative_to(ROOT))
        for folder in (*LAYERS, "tests", "bench")
        for path in (ROOT / folder).rglob("*.py")
        if TOP_LEVEL_IMPORT.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


@pytest.fixture(scope="module")
def checkout_without_links(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clone made as on Windows (`core.symlinks=false`): each link a file holding its target.

    The build's own files come from this working tree, so that the guard under test is this
    one, committed or not."""
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout")
    clone = tmp_path_factory.mktemp("nolinks") / "cronpilot"
    subprocess.run(
        ["git", "-c", "core.symlinks=false", "clone", "-q", "--no-hardlinks", str(ROOT), clone],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert (clone / "cronpilot" / "domain").is_file()
    shutil.copy2(ROOT / "pyproject.toml", clone / "pyproject.toml")
    shutil.copytree(ROOT / "build_support", clone / "build_support", dirs_exist_ok=True)
    return clone


BROKEN_LINK_LINE = re.compile(
    r"cronpilot/\w+ is a plain file, not a link to its layer folder .*"
    r"clone with `git clone -c core\.symlinks=true`"
)


@pytest.mark.slow
@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["wheel", "--no-deps", "-w", "dist", "."], id="wheel"),
        pytest.param(["install", "--dry-run", "--no-deps", "-e", "."], id="editable"),
    ],
)
def test_a_checkout_without_links_builds_nothing(
    checkout_without_links: Path, command: list[str]
) -> None:
    """Without the guard the wheel would hold `cronpilot/__init__.py` alone, and pip say so
    with exit status 0."""
    built = subprocess.run(
        [sys.executable, "-m", "pip", *command],
        cwd=checkout_without_links,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode != 0
    assert BROKEN_LINK_LINE.search(built.stdout + built.stderr), built.stdout + built.stderr
    assert not list(checkout_without_links.glob("dist/*.whl"))
