"""The web console: server-rendered pages over the API's use cases, at `/console/`
(docs/decisions/0028-web-console.md). Imported by the API's app only: no other command pays
for Jinja2."""
