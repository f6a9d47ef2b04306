"""Pure cronpilot domain: entities, ports, the governor. No I/O, imports nothing of ours."""
