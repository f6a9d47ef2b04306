"""What people and programs read of cronpilot, for every front end alike: the JSON shapes of
`--json`, of the API, of the MCP server's tools and of the console's data, and the words and
times of tables and pages. A change of one shape is a change here, seen the same everywhere."""
