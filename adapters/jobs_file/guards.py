"""What would fail later refused at apply: addresses (the address guard), header values that
could split a request, values a store cannot keep, domain validations at a location."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from cronpilot.adapters.http.guard import check_url
from cronpilot.adapters.jobs_file.locations import Issue, Loc
from cronpilot.adapters.jobs_file.schema import NotifyConfig
from cronpilot.adapters.jobs_file.targets import (
    EmailTargetConfig,
    TargetConfig,
    WebhookTargetConfig,
)
from cronpilot.adapters.jsonvalue import check_storable
from cronpilot.domain.access.secrets import mask_urls
from cronpilot.domain.alerts.notify_targets import (
    NotifyTarget,
)
from cronpilot.domain.errors import CronpilotError, UnsafeURL

_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
"""An HTTP token (RFC 9110): anything else is not a header name, or smuggles a second one."""
_UNSENDABLE = re.compile("[\x00-\x08\x0a-\x1f\x7f\ud800-\udfff]")
"""Control characters but tab (CR/LF would end a request or header line) and lone surrogates
(not text), refused in header values and URLs."""


def guard_url(loc: Loc, url: str, allowed_networks: Sequence[str]) -> None:
    if found := _UNSENDABLE.search(url):
        raise Issue(loc, f"holds U+{ord(found.group()):04X}; percent-encode it")
    guard_call(loc, lambda: check_url(url, allowed_networks))


def guard_notify(notify: NotifyConfig | None, loc: Loc, allowed_networks: Sequence[str]) -> None:
    """Webhook URLs are called like endpoints, so they pass the same guard, and each once."""
    urls = notify.urls if notify is not None and notify.urls is not None else []
    seen: set[str] = set()
    for i, url in enumerate(urls):
        guard_url((*loc, "urls", i), url, allowed_networks)
        if url in seen:
            raise Issue((*loc, "urls", i), "this webhook URL is listed twice")
        seen.add(url)
    targets = notify.targets if notify is not None and notify.targets is not None else []
    made: list[NotifyTarget] = []
    for i, config in enumerate(targets):
        _check_target(config, (*loc, "targets", i), allowed_networks)
        target = config.target()
        if target in made:
            raise Issue((*loc, "targets", i), "this target is listed twice")
        made.append(target)


def _check_target(config: TargetConfig, loc: Loc, allowed_networks: Sequence[str]) -> None:
    """A target's URL or SMTP host passes the address guard. A Slack or Teams URL is its
    credential: a refusal gives the reason only, never the URL."""
    if isinstance(config, EmailTargetConfig):
        host = f"[{config.host}]" if ":" in config.host else config.host
        _check_secret_url((*loc, "host"), f"http://{host}:{config.port}/", allowed_networks)
        if (config.username is None) != (config.password is None):
            raise Issue((*loc, "username"), "set both username and password, or neither")
        if config.password is not None and not config.starttls:
            # Without STARTTLS, SMTP AUTH sends the password readable by anyone on the path.
            raise Issue(
                (*loc, "starttls"),
                "a username and password are sent in clear without it: set starttls: true",
            )
        for i, value in enumerate(config.to):
            guard_storable((*loc, "to", i), value)
    elif isinstance(config, WebhookTargetConfig):
        guard_url((*loc, "url"), config.url, allowed_networks)
    else:
        _check_secret_url((*loc, "url"), config.url, allowed_networks)


def _check_secret_url(loc: Loc, url: str, allowed_networks: Sequence[str]) -> None:
    if _UNSENDABLE.search(url):
        raise Issue(loc, "holds a control character; percent-encode it")
    try:
        check_url(url, allowed_networks)
    except UnsafeURL as refused:
        raise Issue(loc, f"refused by the address guard: {refused.reason}") from refused


def guard_headers(headers: Mapping[str, str], loc: Loc) -> None:
    """Refuse what would let a header value end its line and start a forged one (CR/LF), and
    names that servers read differently; the reason never repeats a value (it may be a secret)."""
    seen: set[str] = set()
    for name, value in headers.items():
        if not _HEADER_NAME.fullmatch(name):
            raise Issue((*loc, name), "a header name is letters, digits and !#$%&'*+-.^_`|~ only")
        if name.lower() in seen:
            raise Issue((*loc, name), "duplicate header (names are case-insensitive)")
        seen.add(name.lower())
        if found := _UNSENDABLE.search(value):
            raise Issue(
                (*loc, name),
                f"the value holds U+{ord(found.group()):04X}, which a header cannot carry",
            )


def guard_storable(loc: Loc, value: object) -> None:
    """What SQLite would keep but PostgreSQL refuses (NaN, NUL, lone surrogates) is refused
    for every store, so a file applies on both or on neither."""
    try:
        check_storable(value)
    except ValueError as exc:
        raise Issue(loc, f"cannot be stored: {exc}") from exc


def guard_call(loc: Loc, validate: Callable[[], object]) -> None:
    try:
        validate()
    except CronpilotError as exc:
        # Messages may quote a URL (a refused one): never with its credentials.
        raise Issue(loc, mask_urls(str(exc))) from exc
