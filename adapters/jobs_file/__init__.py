"""The declarative `jobs.yaml`: parsed, expanded and validated completely before anything is
written, so `apply` is all-or-nothing.

Shape::

    limits:                         # at most 2 calls at once, 5 a second (docs/limits.md)
      partner-api: {concurrency: 2, rate: 5/s}
    jobs:
      - name: etl
        description: nightly pipeline
        planner_mode: review          # off | review | auto | graded (the default)
        rejection_cooldown: 2h        # a rejected change is not proposed again for 2h
        limit: partner-api            # its endpoints' calls count against that key
        endpoints:
          - name: fetch
            url: ${SIMULATOR_URL}/etl/fetch
            interval: 30s             # or: cron: "*/5 * * * *" (+ timezone: Europe/Paris)
            min_interval: 10s
            max_interval: 1h
            jitter: 5s                # spread calls over [slot, slot + 5s)
            catch_up: one             # or none; after downtime (window: catch_up_window)
            quiet: [{days: [sat, sun]}, {cron: "0 18 * * 1-5", for: 14h}]   # or every: 10m
            overlap: skip             # or queue_one, allow: slots that come while a call runs
            headers: {Authorization: "Bearer ${ETL_TOKEN}"}
            notify: {urls: ["${ALERTS_URL}"], after: 5}   # or a plain list of URLs
            # also: missed_after: 10m (no run that long past a due slot), late_after: 30s
            # notify.targets: slack, teams, pagerduty, email, webhook (docs/notify-targets.md)
            pause_after: 20
            retry: {attempts: 3, backoff: 1s, max_backoff: 30s, on: [timeout, connect, 5xx, 429]}
            accept_hints: true        # take the Cronpilot-Next-Run answer header as a hint
            dangerous: true           # run_now/next_time proposals always wait for review
            success_when: 'body.status == "ok"'   # a condition (CEL) on the response
            change_ignores: [checked_at, meta.request_id]   # not a change of the answer
            conditional: false        # GET: no If-None-Match / If-Modified-Since (default on)
            rules:                    # the first that holds proposes (adapters.rules_config)
              - {when: 'body.records > 1000', then: {interval: 10s, ttl: 1h}}
          - name: load                # a DAG dependant: runs after fetch
            depends_on: [fetch]
            run_if: 'fetch.body.records > 0'      # a condition on the parents' responses
            approval: required        # ...once an admin approves
            approval_timeout: 2h      # expired (skipped) after that; default 1h

`${NAME}` in any string value is replaced by the environment variable NAME; an unset variable
is an error, never an empty string. `${env:NAME}` does the same and `${file:PATH}` reads a file
(a Docker or Kubernetes secret); both are remembered, so that `export` writes them back rather
than the value (`references`). Durations are seconds or strings such as `250ms`, `30s`,
`5m`, `1h30m`, `1d`; sizes are bytes or strings such as `100KB`, `2MiB`. Unknown fields are
errors, so a misspelt (or not yet supported) option never goes unnoticed. Everything that
would fail later (a header that could split a request, a body PostgreSQL cannot store) is
refused here, so that SQLite and PostgreSQL accept exactly the same files.

Alerts (`notify`, `pause_after`) may be set on a job for all its endpoints; an endpoint's own
`notify.urls`, `notify.after` and `pause_after` each replace the job's (`notify: []` silences
one endpoint of a job that notifies), and so do `notify.missed_after` and `notify.late_after`
(`domain.runs.watch`; scheduled endpoints only). Webhook URLs pass the same address guard as
endpoint URLs. `notify.targets` (`domain.alerts.notify_targets`) lists targets of a kind, each with
the `events` it receives (all by default); an endpoint's own list replaces the job's. Every target
URL and SMTP host passes the guard too; a refused secret URL (Slack's, Teams') is never quoted back.

The parts: `loader` (the file, YAML), `references` (`${…}`), `schema` (the document's pydantic
models, with `fields` for their field types and `targets` for `notify.targets`), `checks`
(across fields and endpoints: schedules, the floor, DAGs, alerts, retries, rules), `guards`
(addresses, headers, storable values) and `locations` (where a problem lies, and how a message
names it). The package exports what its callers use: a file or a document read into
declarations, and the duration and size parsers; the models and field types stay with the
parts.
"""

from cronpilot.adapters.durations import parse_duration
from cronpilot.adapters.jobs_file.fields import parse_size
from cronpilot.adapters.jobs_file.loader import (
    MAX_FILE_BYTES,
    example_jobs_file,
    load_declarations,
    parse_declarations,
)
from cronpilot.adapters.jobs_file.quiet import parse_quiet

__all__ = [
    "MAX_FILE_BYTES",
    "example_jobs_file",
    "load_declarations",
    "parse_declarations",
    "parse_duration",
    "parse_quiet",
    "parse_size",
]
