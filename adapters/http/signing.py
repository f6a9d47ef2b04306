"""HMAC signatures on outgoing requests, so an endpoint can tell cronpilot's calls from others.

The receiver recomputes `hex(hmac_sha256(secret, f"{timestamp}.{METHOD}.{url}.") + body)` with
the raw body bytes it received and compares; the timestamp lets it refuse stale replays.
"""

from __future__ import annotations

import hashlib
import hmac
import time

TIMESTAMP_HEADER = "X-Cronpilot-Timestamp"
SIGNATURE_HEADER = "X-Cronpilot-Signature"


def signature(secret: bytes, timestamp: str, method: str, url: str, body: bytes) -> str:
    """The signature header value for one request."""
    mac = hmac.new(secret, f"{timestamp}.{method}.{url}.".encode(), hashlib.sha256)
    mac.update(body)
    return f"sha256={mac.hexdigest()}"


def signing_headers(secret: bytes, method: str, url: str, body: bytes) -> dict[str, str]:
    """Timestamp and signature headers, stamped with the current Unix time."""
    timestamp = str(int(time.time()))
    return {
        TIMESTAMP_HEADER: timestamp,
        SIGNATURE_HEADER: signature(secret, timestamp, method, url, body),
    }
