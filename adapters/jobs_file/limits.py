"""`limits:` (keys and their bounds) and the `limit:` a job or an endpoint names
(docs/limits.md): each key a `domain.schedule.limits.Limit`, each endpoint the key it counts
against."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import BeforeValidator, Field

from cronpilot.adapters.jobs_file.fields import Strict
from cronpilot.adapters.jobs_file.locations import Issue, Loc
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.schedule.limits import Limit, Rate, parse_rate

_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$")


def _key(value: object) -> object:
    if isinstance(value, str) and not _KEY.match(value):
        raise ValueError(
            "a limit key is letters, digits, '.', '_', ':' or '-' (a name or a host), "
            "at most 200 characters"
        )
    return value


def _at_least_one(value: object) -> object:
    # pydantic reads `true` as 1; 0 would never let a call go.
    if isinstance(value, bool):
        raise ValueError("expected a whole number, not true/false")
    if isinstance(value, int) and value < 1:
        raise ValueError(f"must be at least 1 (a limit of {value} would never call)")
    return value


def _rate(value: object) -> object:
    if isinstance(value, str):
        try:
            return parse_rate(value, "rate")
        except InvalidConfig as problem:
            raise ValueError(problem.reason) from problem
    raise ValueError("expected calls per period as text, e.g. '5/s', '100/m', '1000/h'")


LimitKey = Annotated[str, BeforeValidator(_key)]
AtLeastOne = Annotated[int, BeforeValidator(_at_least_one), Field(le=1_000_000)]


class LimitConfig(Strict):
    concurrency: AtLeastOne | None = None
    rate: Annotated[Rate, BeforeValidator(_rate)] | None = None
    burst: AtLeastOne = 1


def declared_limits(configs: Mapping[str, LimitConfig]) -> dict[str, Limit]:
    """The document's `limits:` as `Limit`s by key; a key with neither bound is refused."""
    limits = {}
    for key, config in configs.items():
        if config.concurrency is None and config.rate is None:
            raise Issue(("limits", key), "set concurrency, rate or both")
        limits[key] = Limit(key, config.concurrency, config.rate, config.burst)
    return limits


def endpoint_limit(
    named: str | None, url: str, limits: Mapping[str, Limit], loc: Loc
) -> str | None:
    """The key an endpoint counts against: the one it (or its job) names, which must be
    declared, else the key named as its URL's host when one is."""
    if named is not None:
        if named not in limits:
            known = ", ".join(sorted(limits)) or "none"
            raise Issue(loc, f"unknown limit {named!r} (declared under limits: {known})")
        return named
    host = urlsplit(url).hostname
    return host if host in limits else None
