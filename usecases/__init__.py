"""Use cases: what an admin or a worker asks of cronpilot, one function (or small class) each,
each in one unit of work (`domain.ports.UnitOfWork`): all of its writes or none. The CLI, the
HTTP API, the web console and the MCP server call these and never write through repositories
themselves. This layer imports `domain` only; adapters hand it a `UnitOfWorkFactory` (and a
`Waker`, told after commit).
"""
