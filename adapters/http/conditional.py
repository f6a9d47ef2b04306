"""Conditional calls (RFC 9110 §13): an endpoint whose last answer carried `ETag` or
`Last-Modified` is asked `If-None-Match` / `If-Modified-Since`, and a `304 Not Modified` is
answered, as an HTTP cache answers, with the answer it confirmed: its status and what was read
of its body. So whatever judges an answer (`success_when`, rules, `run_if`, templates, change
detection) sees the same answer again, unchanged, and no body crossed the network.

The answers are kept per worker, in memory, by endpoint (`HttpRequest.conditional_key`) and
URL, the least recently used dropped past a budget of body bytes. A worker that has none for an
endpoint (it started since, or the previous call went to another worker) calls without
validators: the answer is whole, never wrong.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass

from aiohttp import hdrs

from cronpilot.adapters.http.body import StoredBody

DEFAULT_BUDGET_BYTES = 64 * 1024**2


@dataclass(frozen=True, slots=True)
class Confirmable:
    """An answer a 304 can confirm: where it came from, its validators, status and body."""

    url: str
    etag: str | None
    last_modified: str | None
    status: int
    stored: StoredBody

    @property
    def cost(self) -> int:
        return len(self.stored.text or "") + len(self.url) + 200

    def validators(self) -> dict[str, str]:
        """The request headers that ask whether it still stands."""
        asked: dict[str, str] = {}
        if self.etag is not None:
            asked[hdrs.IF_NONE_MATCH] = self.etag
        if self.last_modified is not None:
            asked[hdrs.IF_MODIFIED_SINCE] = self.last_modified
        return asked


class ConfirmableAnswers:
    """The last confirmable answer of each conditional endpoint, within `budget_bytes`."""

    def __init__(self, budget_bytes: int = DEFAULT_BUDGET_BYTES) -> None:
        self._budget = budget_bytes
        self._used = 0
        self._kept: OrderedDict[str, Confirmable] = OrderedDict()

    def get(self, key: str, url: str) -> Confirmable | None:
        """The answer kept for `key` if it came from `url` (a template may change the URL)."""
        kept = self._kept.get(key)
        if kept is None or kept.url != url:
            return None
        self._kept.move_to_end(key)
        return kept

    def keep(
        self, key: str, url: str, status: int, headers: Mapping[str, str], stored: StoredBody
    ) -> None:
        """Keep a 2xx answer that carried a validator; forget the endpoint's when it did not
        (a validator the server no longer sends must not be asked again)."""
        etag, modified = headers.get(hdrs.ETAG), headers.get(hdrs.LAST_MODIFIED)
        self._forget(key)
        if etag is None and modified is None:
            return
        kept = Confirmable(url, etag, modified, status, stored)
        if kept.cost > self._budget:
            return
        self._kept[key] = kept
        self._used += kept.cost
        while self._used > self._budget:
            _, dropped = self._kept.popitem(last=False)
            self._used -= dropped.cost

    def _forget(self, key: str) -> None:
        dropped = self._kept.pop(key, None)
        if dropped is not None:
            self._used -= dropped.cost
