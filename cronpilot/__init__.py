"""cronpilot: calls HTTP endpoints on schedules and adapts the schedules from what they answer.

The repository keeps its layers as top-level folders (`domain/`, `usecases/`, `runtime/`,
`adapters/`, `scheduler/`, `planner/`, `migrations/`, and `harness/` for the demo and the
planner exams); this package links them under one name so that an install puts only
`cronpilot` in site-packages (docs/decisions/0012-namespaced-package.md).
"""
