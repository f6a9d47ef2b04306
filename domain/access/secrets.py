"""Which header values and URL parts are secrets, and how they appear in any output.

The name patterns err on the side of masking: hiding a harmless value costs a reader little,
printing a credential cannot be undone.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from functools import lru_cache
from urllib.parse import unquote_plus

MASK = "****"
_SECRET_NAME = re.compile(
    r"auth|cookie|token|secret|key|passw|pwd|signature|session|credential|private"
    # `sig` only as a word of its own: `X-Sig`, `sig`, not `design`.
    r"|(?<![a-z])sig(?![a-z])",
    re.IGNORECASE,
)
# The authority runs to the first `/`, `?` or `#`; its userinfo to the last `@` within it.
_USERINFO = re.compile(r"^([a-z][a-z0-9+.-]*://)[^/?#]*@", re.IGNORECASE)
# A URL's scheme starts at the first letter of a run of scheme characters (`2http://` is masked
# from `http`), and a search never starts again inside the run: trying each of its positions
# would scan the rest of the run each time, quadratic in a long value without any `://`.
_URL = re.compile(
    r"(?<![a-z0-9+.-])(?P<prefix>[0-9+.-]*)(?P<url>[a-z][a-z0-9+.-]*://[^\s'\"<>]+)",
    re.IGNORECASE,
)


_ORIGIN = re.compile(r"^([a-z][a-z0-9+.-]*://)(?:[^/?#@]*@)?([^/?#]*)", re.IGNORECASE)


def fingerprint(value: str) -> str:
    """A short digest of `value`: the same value reads the same in every log line, and the
    line tells nothing of it."""
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def loggable_url(url: str) -> str:
    """`url` fit for a log line or an error kept in the store: its scheme and host, then a
    fingerprint of the whole URL (`https://hooks.slack.com/… #3f2a9c1e07aa`). The path and query
    of a target or an endpoint may be its credential (a Slack webhook's path is), so neither
    is ever written out; the fingerprint tells two URLs of one host apart."""
    found = _ORIGIN.match(url)
    origin = f"{found[1]}{found[2]}" if found else "?"
    return f"{origin}/… #{fingerprint(url)}"


def without_url(text: str, url: str) -> str:
    """`text` (a driver's error message, say) with `url`, and its path and query, replaced by
    `loggable_url(url)`: some errors quote the URL they failed on."""
    found = _ORIGIN.match(url)
    rest = url[found.end() :] if found else ""
    text = text.replace(url, loggable_url(url))
    return text.replace(rest, "/…") if len(rest) > 1 else text


def is_secret_header(name: str) -> bool:
    return _looks_secret(name)


def mask_headers(headers: dict[str, str]) -> dict[str, str]:
    """Headers fit for logs and CLI output: secret values replaced by a mask."""
    return {name: MASK if is_secret_header(name) else value for name, value in headers.items()}


@lru_cache(maxsize=1024)
def mask_url(url: str) -> str:
    """`url` fit for output: userinfo masked, and the values of query (and fragment) parameters
    whose names look secret (`token`, `api_key`, `sig`, …). Everything else is kept character
    for character (no parse and re-assembly), so the URL still reads as the one configured."""
    url = _USERINFO.sub(rf"\g<1>{MASK}@", url, count=1)
    return replace_secret_params(url, lambda _name, _value: MASK)


def mask_urls(text: str) -> str:
    """`text` (an error message, say) with every URL in it passed through `mask_url`."""
    return _URL.sub(lambda found: found["prefix"] + mask_url(found["url"]), text)


def replace_secret_params(url: str, value_for: Callable[[str, str], str]) -> str:
    """`url` with the value of each query (and fragment) parameter whose name looks secret
    replaced by `value_for(name, value)` (the name decoded, the value as written); everything
    else kept character for character."""
    return replace_params(
        url, lambda name, value: value_for(name, value) if _looks_secret(name) else value
    )


def replace_params(url: str, value_for: Callable[[str, str], str]) -> str:
    """`url` with the value of every query (and fragment) parameter replaced by
    `value_for(name, value)` (the name decoded, the value as written); everything else kept
    character for character."""
    rest, hash_mark, fragment = url.partition("#")
    base, question_mark, query = rest.partition("?")
    return (
        base
        + question_mark
        + _replace_params(query, value_for)
        + hash_mark
        + _replace_params(fragment, value_for)
    )


def _replace_params(query: str, value_for: Callable[[str, str], str]) -> str:
    pairs = []
    for pair in query.split("&"):
        name, equals, value = pair.partition("=")
        pairs.append(f"{name}={value_for(unquote_plus(name), value)}" if equals else pair)
    return "&".join(pairs)


# Every run masks its request's header and parameter names, and they repeat from run to run.
@lru_cache(maxsize=1024)
def _looks_secret(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))
