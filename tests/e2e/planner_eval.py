"""What the two files of `cronpilot planner eval`'s tests share: `test_planner_eval.py` (the
heuristic and the rules, and the command's refusals) and `test_planner_eval_llm.py` (an LLM),
a file each so that two workers share their minute or so of CPU."""

from __future__ import annotations

from pathlib import Path

from cronpilot.harness.exams.catalog import EXAMS

EVAL_TIMEOUT = 600
NAMES = [exam.name for exam in EXAMS]


def database_bytes(url: str) -> bytes:
    """The configured database's bytes: the exams must leave them as they were."""
    return Path(url.removeprefix("sqlite+aiosqlite:///")).read_bytes()
