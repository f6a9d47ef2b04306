"""What cronpilot is shown and measured with, not what it runs: the demo (`cronpilot demo`),
the endpoint simulator, and the planner exams (`cronpilot planner eval`). No product layer
imports it (import-linter); the CLI loads its two commands by module path."""
