"""Signatures on outgoing calls by the Standard Webhooks spec (https://www.standardwebhooks.com),
so that a receiver verifies them with any of its libraries:

    webhook-id: the message's id (an alert's event id, a run's id): the same on every attempt
    webhook-timestamp: Unix seconds
    webhook-signature: v1,<base64 of HMAC-SHA256(key, f"{id}.{timestamp}.{body}")>

The key is written `whsec_<base64 of its bytes>`; a secret without that prefix is its own UTF-8
bytes (what a receiver then configures as `whsec_` + base64 of it). While a key rotates, the
previous key signs as well, a second `v1,…` after a space, until its grace ends. The bespoke
`X-Cronpilot-Timestamp` / `X-Cronpilot-Signature` pair of earlier releases (hex HMAC of
timestamp, method, URL and body, keyed with the secret's text) is added on request, for one
release, while receivers move over (docs/notify-targets.md, "Signatures").
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import uuid
from dataclasses import dataclass
from datetime import datetime

ID_HEADER = "webhook-id"
TIMESTAMP_HEADER = "webhook-timestamp"
SIGNATURE_HEADER = "webhook-signature"
LEGACY_TIMESTAMP_HEADER = "X-Cronpilot-Timestamp"
LEGACY_SIGNATURE_HEADER = "X-Cronpilot-Signature"
SECRET_PREFIX = "whsec_"


def secret_bytes(secret: str) -> bytes:
    """The key a secret stands for; raises `ValueError` (never quoting it) when a `whsec_`
    secret is not base64 or holds no byte."""
    if not secret.startswith(SECRET_PREFIX):
        return secret.encode()
    text = secret.removeprefix(SECRET_PREFIX).rstrip("=")
    try:
        # Padding is optional, as the reference libraries read it.
        key = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except binascii.Error:
        raise ValueError(f"what follows {SECRET_PREFIX} is not base64") from None
    if not key:
        raise ValueError(f"{SECRET_PREFIX} is followed by no key")
    return key


def legacy_signature(secret: bytes, timestamp: str, method: str, url: str, body: bytes) -> str:
    """The `X-Cronpilot-Signature` of earlier releases."""
    mac = hmac.new(secret, f"{timestamp}.{method}.{url}.".encode(), hashlib.sha256)
    mac.update(body)
    return f"sha256={mac.hexdigest()}"


@dataclass(frozen=True, slots=True)
class SigningKeys:
    """What signs: the current secret, the previous one during its grace, and whether the
    legacy headers go along."""

    current: str
    previous: str | None = None
    previous_until: datetime | None = None
    """When the previous secret stops signing; None: for as long as it is set."""
    legacy_headers: bool = False


class Signer:
    """Signs calls with keys prepared once: each call copies a keyed HMAC instead of keying one."""

    def __init__(self, keys: SigningKeys) -> None:
        self._current = hmac.new(secret_bytes(keys.current), digestmod=hashlib.sha256)
        self._previous = (
            None
            if keys.previous is None
            else hmac.new(secret_bytes(keys.previous), digestmod=hashlib.sha256)
        )
        self._previous_until = keys.previous_until
        self._legacy = keys.current.encode() if keys.legacy_headers else None

    def headers(
        self, message_id: str | None, method: str, url: str, body: bytes, now: datetime
    ) -> dict[str, str]:
        """The signing headers of one call sent at `now`; a call without an id gets a new one."""
        message_id = message_id or f"msg_{uuid.uuid4().hex}"
        timestamp = str(int(now.timestamp()))
        content = f"{message_id}.{timestamp}.".encode() + body
        signatures = [_v1(self._current, content)]
        until = self._previous_until
        if self._previous is not None and (until is None or now < until):
            signatures.append(_v1(self._previous, content))
        headers = {
            ID_HEADER: message_id,
            TIMESTAMP_HEADER: timestamp,
            SIGNATURE_HEADER: " ".join(signatures),
        }
        if self._legacy is not None:
            headers[LEGACY_TIMESTAMP_HEADER] = timestamp
            headers[LEGACY_SIGNATURE_HEADER] = legacy_signature(
                self._legacy, timestamp, method, url, body
            )
        return headers


def _v1(keyed: hmac.HMAC, content: bytes) -> str:
    mac = keyed.copy()
    mac.update(content)
    return "v1," + base64.b64encode(mac.digest()).decode("ascii")
