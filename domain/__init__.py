"""Pure cronpilot domain: entities, ports, the governor. No I/O, imports nothing of ours.

One folder per area (schedule, runs, planning, rules, alerts, graph, search, access) and the
ports under `ports/`; the modules every area shares stay here: the entities (`model`), errors,
ids, versions, paging, log records' extras and the diff of a declaration."""
