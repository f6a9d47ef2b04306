"""Who may sit the planner exams: what `cronpilot planner eval --planner` takes. A module of
its own, light to import: every `cronpilot` command's help names the choices."""

from __future__ import annotations

from enum import StrEnum


class PlannerChoice(StrEnum):
    FRESHNESS = "freshness"
    HEURISTIC = "heuristic"
    RULES = "rules"
    LLM = "llm"
