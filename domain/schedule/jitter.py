"""Jitter: when a baseline slot's call goes out, spread off its grid time.

The offset is pseudo-random but a pure function of the endpoint and the slot, so every worker
and every re-plan agrees on it, and a slot that is planned again is called at the same moment.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from hashlib import blake2b

_MICROSECOND = timedelta(microseconds=1)
_HASH_BITS = 64


def jittered(
    key: str, slot: datetime, next_slot: datetime, jitter: timedelta, floor: timedelta
) -> datetime:
    """When to call `slot`: a stable offset in [0, `jitter`) after it, drawn from a hash of
    `key` (the endpoint) and the slot, that leaves at least `floor` before `next_slot` (the
    following slot of the grid), so a jittered call never runs into the next slot's and two
    consecutive calls stay the floor apart. No room, no offset."""
    spread = min(jitter, next_slot - slot - floor) // _MICROSECOND
    if spread <= 0:
        return slot
    digest = blake2b(f"{key}@{slot.isoformat()}".encode(), digest_size=_HASH_BITS // 8).digest()
    # An integer in [0, spread): exact, where a float fraction could round up to `spread`.
    offset = (int.from_bytes(digest) * spread) >> _HASH_BITS
    return slot + offset * _MICROSECOND
