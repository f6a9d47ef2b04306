"""An endpoint's version: what an `ETag` carries, so that a write made against a stale read
is refused (`If-Match`) instead of silently overwriting another admin's change."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, replace
from typing import Any

from cronpilot.domain.access.secrets import mask_headers, mask_url
from cronpilot.domain.model import Endpoint, EndpointSpec, Job


def endpoint_version(endpoint: Endpoint) -> str:
    """A digest of what admins and the planner change (declaration, pause, hints), not of what
    every run moves (next run, failures, lease): a run between a read and a write does not
    make the write stale. Keys sorted, so every store gives the same digest.

    Secrets are masked first, as in every output: the ETag is shown to read-only tokens, and a
    plain digest over a secret would let them test guesses of it offline. So a change to a
    secret value alone does not change the version."""
    state = {
        "spec": asdict(_masked(endpoint.spec)),
        "pause": None if endpoint.pause is None else asdict(endpoint.pause),
        "interval_hint": None if endpoint.interval_hint is None else asdict(endpoint.interval_hint),
        "oneshot_hint": None if endpoint.oneshot_hint is None else asdict(endpoint.oneshot_hint),
    }
    return _digest(state)


def declarations_version(
    names: Iterable[str], jobs: Mapping[str, Job], specs: Mapping[str, EndpointSpec]
) -> str:
    """The version of what a declaration document would change: the stored jobs named `names`
    (one not stored counts as none) and the specs of their endpoints (`specs` by ref), masked
    as in `endpoint_version`. Pauses, hints and runs do not count: an apply leaves them be."""
    state = {
        "jobs": {name: asdict(jobs[name]) if name in jobs else None for name in names},
        "endpoints": {ref: asdict(_masked(spec)) for ref, spec in specs.items()},
    }
    return _digest(state)


def _digest(state: Mapping[str, Any]) -> str:
    text = json.dumps(state, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _masked(spec: EndpointSpec) -> EndpointSpec:
    return replace(
        spec,
        url=mask_url(spec.url),
        headers=mask_headers(spec.headers),
        notify=tuple(mask_url(url) for url in spec.notify),
    )
