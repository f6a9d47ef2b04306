"""When an endpoint is called: cron and intervals, jitter and spacing, quiet periods, pauses,
limits per target, the overlap policy, `Retry-After` steering, and the governor that decides
the next slot from all of them."""
