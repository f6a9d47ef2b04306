"""The HTTP API (`cronpilot serve`): FastAPI routers over the use cases, problem documents
for errors, bearer tokens for access (docs/decisions/0017-http-api.md)."""
