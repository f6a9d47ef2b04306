"""Rules a job declares over its responses: CEL conditions, when a rule fires, and the damping
that keeps it from swinging."""
