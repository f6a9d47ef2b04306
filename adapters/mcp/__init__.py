"""The MCP server (`cronpilot mcp`, decision 0027): cronpilot's reads and writes as tools and
resources for AI agents, over stdio or streamable HTTP. Each tool calls the use case the CLI
and the API call, and shows what it returns in their JSON shapes."""
