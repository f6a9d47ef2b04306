"""The planner exams: `cronpilot planner eval` (decision 0031)."""
