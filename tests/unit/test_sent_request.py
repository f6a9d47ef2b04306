"""The request kept on a run: secrets masked, every part bounded."""

from __future__ import annotations

from cronpilot.domain.access.secrets import MASK
from cronpilot.domain.model import HttpRequest
from cronpilot.domain.runs.sent_request import (
    MAX_BODY_CHARS,
    MAX_HEADER_CHARS,
    MAX_URL_CHARS,
    sent_request,
)


def _request(**fields: object) -> HttpRequest:
    base: dict[str, object] = {
        "method": "post",
        "url": "https://ann:pw@api.example.com/v1?token=abc&page=2",
        "headers": {"Authorization": "Bearer s3cret", "X-Page": "2"},
        "body": {"q": "é", "n": [1, 2]},
        "timeout_seconds": 5.0,
        "max_response_bytes": 1000,
    }
    return HttpRequest(**{**base, **fields})  # type: ignore[arg-type]


def test_secrets_are_masked_and_the_rest_kept_as_sent() -> None:
    sent = sent_request(_request())

    assert sent.method == "POST"
    assert sent.url == f"https://{MASK}@api.example.com/v1?token={MASK}&page=2"
    assert sent.headers == {"Authorization": MASK, "X-Page": "2"}
    assert sent.body == '{"q":"é","n":[1,2]}'
    assert "s3cret" not in repr(sent) and "abc" not in repr(sent)


def test_no_body_is_kept_as_none_and_a_json_null_is_not_confused_with_it() -> None:
    assert sent_request(_request(body=None)).body is None
    assert sent_request(_request(body=[None])).body == "[null]"


def test_each_part_is_cut_to_its_bound_with_its_length_said() -> None:
    sent = sent_request(
        _request(
            url="https://example.com/" + "a" * 5000,
            headers={"X-Long": "v" * 2000},
            body={"blob": "x" * 10_000},
        )
    )

    assert sent.url.startswith("https://example.com/aaa")
    assert len(sent.url) < MAX_URL_CHARS + 30 and sent.url.endswith("(5,020 chars)")
    assert len(sent.headers["X-Long"]) < MAX_HEADER_CHARS + 30
    assert sent.body is not None and sent.body.endswith("(10,011 chars)")
    assert len(sent.body) < MAX_BODY_CHARS + 30
