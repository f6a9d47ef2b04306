"""A run from claim to record: claiming, the transitions of an endpoint around its runs, the
finish settled once, retries, cancelling, runs asked for by hand, the request sent (templates,
conditional calls, masking), assertions, retention, missed and late runs, tracing and workers."""
