"""Whether cronpilot accepts a command line that a deployment artefact runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CRONPILOT = Path(sys.executable).with_name("cronpilot")


def accepts(args: list[str]) -> bool:
    """True when `cronpilot ARGS --help` exits 0: the command exists and takes every option
    given (click refuses an unknown one before it reads --help)."""
    done = subprocess.run(
        [str(CRONPILOT), *args, "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    return done.returncode == 0
