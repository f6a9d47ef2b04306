"""deploy/image/build.sh refuses, in one line and before touching anything, a machine it cannot
build on."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BUILD = ROOT / "deploy" / "image" / "build.sh"


def _built(command: list[str], path: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": path, "HOME": "/nonexistent"},
    )


def test_a_build_without_root_says_so() -> None:
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    built = _built([*(nobody if os.geteuid() == 0 else []), str(BUILD)], "/usr/bin:/bin")

    assert built.returncode == 1
    assert built.stderr == "build.sh: run as root: debootstrap makes the root filesystem\n"


def test_a_build_without_debootstrap_says_what_to_install(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("build.sh looks for debootstrap only once it runs as root")
    # A PATH with the few tools build.sh needs before its checks, and no debootstrap.
    for tool in ("bash", "id", "dirname"):
        (tmp_path / tool).symlink_to(str(shutil.which(tool)))
    built = _built([str(BUILD)], str(tmp_path))

    assert built.returncode == 1
    assert built.stderr == "build.sh: debootstrap is missing (apt-get install debootstrap)\n"
