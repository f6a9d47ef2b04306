"""The manual builds as a site: `mkdocs build --strict` fails on a broken link or anchor, a page
left out of the nav, or a bad config (mkdocs.yml's `validation` turns each into a warning)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _build(project: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=project,
        capture_output=True,
        text=True,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
        check=False,
    )


def test_the_docs_site_builds_strictly(tmp_path: Path) -> None:
    built = _build(ROOT, tmp_path)
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "index.html").exists()
    assert (tmp_path / "decisions" / "0012-namespaced-package" / "index.html").exists()


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# x\n\n[gone](nowhere.md)\n", encoding="utf-8")
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:")[0]
    (tmp_path / "mkdocs.yml").write_text(config + "\nnav:\n  - Home: index.md\n", encoding="utf-8")
    built = _build(tmp_path, tmp_path / "site")
    assert built.returncode != 0
    assert "nowhere.md" in built.stderr


def _check_reference(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "docs_reference.py"), "--check", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_generated_reference_pages_are_current() -> None:
    """The CLI, settings, jobs.yaml and metrics pages are written from the code; an option,
    setting, field or metric added without running the script leaves its page behind."""
    done = _check_reference()
    assert done.returncode == 0, done.stderr


def test_a_stale_reference_page_is_caught(tmp_path: Path) -> None:
    copy = tmp_path / "reference"
    shutil.copytree(ROOT / "docs" / "reference", copy)
    with (copy / "settings.md").open("a", encoding="utf-8") as page:
        page.write("a setting that is gone\n")
    done = _check_reference("--into", str(copy))
    assert done.returncode == 1
    assert "reference/settings.md" in done.stderr
    assert "cli.md" not in done.stderr
