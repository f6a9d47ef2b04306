"""What every worker runs on, whatever its work: the one timer (`timing`),
the tracer that records nothing (`tracing`). Imports `domain`
only, so the scheduler and the planner may both use it without importing each other."""
