"""The domain's runs: claiming, transitions, settling, retries, cancelling, requested_runs, outage,
sent_request, conditional_calls, templates, assertions, excerpt, retention, watch, tracing,
telemetry, workers."""
