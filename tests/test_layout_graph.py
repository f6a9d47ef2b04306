"""docs/layout.md's import graph is the code's: `scripts/import_graph.py --check` redraws it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_import_graph_in_the_layout_page_is_current() -> None:
    checked = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "import_graph.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
