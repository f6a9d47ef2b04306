"""What counts as a secret in headers and URLs, and how it is masked in every output."""

from __future__ import annotations

import pytest

from cronpilot.domain.access.secrets import (
    MASK,
    fingerprint,
    is_secret_header,
    loggable_url,
    mask_headers,
    mask_url,
    mask_urls,
    without_url,
)


@pytest.mark.parametrize(
    "name",
    [
        "Authorization",
        "Proxy-Authorization",
        "X-Auth-Token",
        "Cookie",
        "X-API-Key",
        "Ocp-Apim-Subscription-Key",
        "X-Session-Id",
        "X-Goog-Credential",
        "Private-Token",
        "X-Hub-Signature-256",
        "X-Sig",
        "X-Client-Secret",
        "X-Password",
    ],
)
def test_credential_headers_are_secret(name: str) -> None:
    assert is_secret_header(name)
    assert is_secret_header(name.lower())


@pytest.mark.parametrize("name", ["Accept", "Content-Type", "User-Agent", "X-Design", "X-Signal"])
def test_ordinary_headers_are_not(name: str) -> None:
    assert not is_secret_header(name)


def test_mask_headers_keeps_names_and_hides_only_secret_values() -> None:
    headers = {"X-Session": "abc", "Accept": "application/json"}

    assert mask_headers(headers) == {"X-Session": MASK, "Accept": "application/json"}


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("https://api.example.com/v1/orders?page=2", "https://api.example.com/v1/orders?page=2"),
        ("https://alice:pw@example.com/x", f"https://{MASK}@example.com/x"),
        ("https://ghp_abc@example.com:8443/x", f"https://{MASK}@example.com:8443/x"),
        (
            "https://example.com/x?page=2&token=t0k&api_key=k3y&sig=s1g&limit=5",
            f"https://example.com/x?page=2&token={MASK}&api_key={MASK}&sig={MASK}&limit=5",
        ),
        (
            "https://example.com/x?access_token=a&X-Amz-Signature=b&password=c&auth=d",
            f"https://example.com/x?access_token={MASK}&X-Amz-Signature={MASK}"
            f"&password={MASK}&auth={MASK}",
        ),
        (
            "https://example.com/x?apiKey=a&design=b",
            f"https://example.com/x?apiKey={MASK}&design=b",
        ),
        (
            "https://example.com/cb#access_token=a&state=s",
            f"https://example.com/cb#access_token={MASK}&state=s",
        ),
        ("https://example.com/x?token", "https://example.com/x?token"),
        ("https://a@b@example.com/@x?k=1", f"https://{MASK}@example.com/@x?k=1"),
        ("https://example.com/x?%74oken=a", f"https://example.com/x?%74oken={MASK}"),
    ],
)
def test_mask_url_hides_userinfo_and_secret_parameters(url: str, masked: str) -> None:
    assert mask_url(url) == masked


def test_a_url_that_does_not_parse_is_masked_all_the_same() -> None:
    assert mask_url("http://u:p@[::1/?token=x") == f"http://{MASK}@[::1/?token={MASK}"


def test_a_url_without_authority_keeps_its_slashes() -> None:
    assert mask_url("sqlite+aiosqlite:///data/x.db") == "sqlite+aiosqlite:///data/x.db"


def test_mask_urls_masks_every_url_in_a_message() -> None:
    message = "ClientResponseError: 500, url=URL('https://h.example/a?key=K1') via http://u:p@h/b"

    masked = mask_urls(message)

    assert masked == (
        f"ClientResponseError: 500, url=URL('https://h.example/a?key={MASK}') via http://{MASK}@h/b"
    )


def test_a_scheme_starts_at_the_first_letter_of_its_word() -> None:
    assert mask_urls("code 2http://u:p@h/x") == f"code 2http://{MASK}@h/x"
    assert mask_urls("-a+b.c://u:p@h") == f"-a+b.c://{MASK}@h"


def test_masking_reads_a_megabyte_once() -> None:
    # A jobs-file value, a server's reason phrase: a long word with no `://` in it made the
    # old pattern start again at every one of its letters, hours for a megabyte (the suite's
    # timeout stops it long before).
    word = "a" * 1_000_000

    assert mask_urls(word) == word
    assert mask_urls(f"{word} http://u:p@h/?token=t") == f"{word} http://{MASK}@h/?token={MASK}"
    assert mask_urls(f"1{word}://u:p@h") == f"1{word}://{MASK}@h"


def test_a_loggable_url_keeps_the_host_and_a_fingerprint_never_the_path_or_query() -> None:
    slack = "https://hooks.slack.com/services/T0/B0/s3cr3t?x=1"
    other = "https://hooks.slack.com/services/T0/B0/other"

    shown = loggable_url(slack)

    assert shown == f"https://hooks.slack.com/… #{fingerprint(slack)}"
    assert "s3cr3t" not in shown and "services" not in shown
    assert loggable_url(other) != shown
    assert loggable_url("http://user:pw@10.0.0.5:8080/a").startswith("http://10.0.0.5:8080/… #")
    assert loggable_url("not a url").startswith("?/… #")


def test_an_error_quoting_its_url_is_told_without_it() -> None:
    url = "https://api.example.com/v1/k3y/items?token=t0k"
    said = f"InvalidUrlClientError: {url}; path /v1/k3y/items?token=t0k"

    cleaned = without_url(said, url)

    assert "k3y" not in cleaned and "t0k" not in cleaned
    assert loggable_url(url) in cleaned
