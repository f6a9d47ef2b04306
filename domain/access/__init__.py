"""Who may do what: actors, API tokens and their reach, secrets sealed at rest, the audit log."""
