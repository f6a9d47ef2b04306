"""Encryption at rest for secret header values, the secret parameters of URLs and the secrets
of notification targets (Fernet: AES-128-CBC + HMAC, from `cryptography`)."""

from __future__ import annotations

import logging
import os
from dataclasses import replace
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken

from cronpilot.domain.access.secrets import (
    MASK,
    is_secret_header,
    replace_params,
    replace_secret_params,
)
from cronpilot.domain.alerts.notify_targets import SECRET_FIELDS, NotifyTarget, with_secrets
from cronpilot.domain.errors import CronpilotError, InvalidConfig
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.ports import SecretCipher

logger = logging.getLogger(__name__)

KEY_FILE_MODE = 0o600


class SecretUndecryptable(CronpilotError):
    """A stored secret cannot be decrypted: the key is not the one it was written with."""

    def __init__(
        self, message: str = "a stored secret cannot be decrypted with the configured key"
    ) -> None:
        super().__init__(message)


class FernetCipher(SecretCipher):
    def __init__(self, key: str) -> None:
        self._fernet = Fernet(key.encode("ascii"))

    def encrypt(self, plaintext: str) -> str:
        return self._fernet.encrypt(plaintext.encode()).decode("ascii")

    def decrypt(self, token: str) -> str:
        try:
            return self._fernet.decrypt(token.encode("ascii")).decode()
        except (InvalidToken, ValueError) as exc:
            raise SecretUndecryptable() from exc


def fernet_cipher(key: str, where: str) -> FernetCipher:
    """The cipher of `key`; raises `InvalidConfig` naming `where` the key came from."""
    try:
        return FernetCipher(key)
    except (ValueError, UnicodeError) as exc:
        # Never echo the key: the reason names only what is wrong with it.
        raise InvalidConfig(where, "not a Fernet key (32 url-safe base64-encoded bytes)") from exc


class SecretKeyMissing(InvalidConfig, SecretUndecryptable):
    """A stored secret must be opened, and there is no key: no `CRONPILOT_SECRET_KEY`, no key
    file. Nothing is made up in its place: a new key could open nothing stored. A bad setting
    to a command (exit 2); to a worker's claim, a secret it cannot open (the run fails)."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            "CRONPILOT_SECRET_KEY",
            f"not set, and no key file {path}: this database's secrets were sealed with a key; "
            "set CRONPILOT_SECRET_KEY to the key the other workers use (or restore the file)",
        )


class KeyFileCipher(SecretCipher):
    """The cipher of the key file at `path`, read when first needed. Sealing makes the file
    when it is missing; opening without it raises `SecretKeyMissing`. So a command that only
    reads never makes a key (which could not open what another key sealed)."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._cipher: FernetCipher | None = None

    def has_key(self) -> bool:
        return self._cipher is not None or self._path.exists()

    def encrypt(self, plaintext: str) -> str:
        return self._loaded(create=True).encrypt(plaintext)

    def decrypt(self, token: str) -> str:
        return self._loaded(create=False).decrypt(token)

    def _loaded(self, *, create: bool) -> FernetCipher:
        if self._cipher is None:
            where = f"secret key file {self._path}"
            try:
                key = load_or_create_key(self._path) if create else self._read()
            except (OSError, UnicodeError) as exc:
                raise InvalidConfig(where, f"cannot read or create it: {exc}") from exc
            self._cipher = fernet_cipher(key, where)
        return self._cipher

    def _read(self) -> str:
        try:
            return self._path.read_text(encoding="ascii").strip()
        except FileNotFoundError:
            raise SecretKeyMissing(self._path) from None


def load_or_create_key(path: Path) -> str:
    """The Fernet key stored at `path`, created (readable by the owner only) when missing."""
    if path.exists():
        return path.read_text(encoding="ascii").strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    key = Fernet.generate_key().decode("ascii")
    # O_EXCL: two processes starting together must not both write a different key.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, KEY_FILE_MODE)
    except FileExistsError:
        return path.read_text(encoding="ascii").strip()
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(key + "\n")
    logger.info("created secret key file", extra=log_extra("create_key", path=str(path)))
    return key


SEALED_PREFIX = "sealed:v1:"
"""Marks an encrypted value, so reading never depends on today's idea of which names are
secret: a header stored in clear before `is_secret_header` learned its name still reads."""


def _sealed(value: str, cipher: SecretCipher) -> str:
    """`value` encrypted and marked; a value already sealed stays as it is."""
    return value if value.startswith(SEALED_PREFIX) else SEALED_PREFIX + cipher.encrypt(value)


def _opened(value: str, cipher: SecretCipher) -> str:
    """The inverse of `_sealed`; a value stored in clear stays as it is."""
    if not value.startswith(SEALED_PREFIX):
        return value
    return cipher.decrypt(value.removeprefix(SEALED_PREFIX))


def seal_headers(headers: dict[str, str], cipher: SecretCipher | None) -> dict[str, str]:
    """Headers as stored: secret values encrypted when a cipher is configured."""
    if cipher is None:
        return dict(headers)
    return {k: _sealed(v, cipher) if is_secret_header(k) else v for k, v in headers.items()}


def open_headers(headers: dict[str, str], cipher: SecretCipher | None) -> dict[str, str]:
    """The inverse of `seal_headers`; without a cipher, values stay as stored (sealed)."""
    if cipher is None:
        return dict(headers)
    return {name: _opened(value, cipher) for name, value in headers.items()}


def seal_url(url: str, cipher: SecretCipher | None) -> str:
    """A URL as stored: the values of its secret query (and fragment) parameters (`token`,
    `api_key`, `sig`…: `domain.access.secrets.replace_secret_params`) encrypted when a cipher is
    configured; the rest kept character for character. A sealed value is URL-safe; a masked
    one (an outbox row's address of a target) holds nothing to seal."""
    if cipher is None:
        return url
    return replace_secret_params(
        url, lambda _name, value: value if value == MASK else _sealed(value, cipher)
    )


def open_url(url: str, cipher: SecretCipher | None) -> str:
    """The inverse of `seal_url`: every sealed parameter value opened, whatever its name."""
    if cipher is None or SEALED_PREFIX not in url:
        return url
    return replace_params(url, lambda _name, value: _opened(value, cipher))


def seal_target(target: NotifyTarget, cipher: SecretCipher | None) -> NotifyTarget:
    """A notification target as stored: its secrets (`domain.alerts.notify_targets.SECRET_FIELDS`)
    encrypted when a cipher is configured, and the secret parameters of a URL that is not a
    secret as a whole (a webhook's `?token=`); a value already sealed stays as it is."""
    if cipher is None:
        return target
    if "url" not in SECRET_FIELDS[target.kind]:
        target = replace(target, url=seal_url(target.url, cipher))
    return with_secrets(target, lambda value: _sealed(value, cipher))


def open_target(target: NotifyTarget, cipher: SecretCipher | None) -> NotifyTarget:
    """The inverse of `seal_target`; without a cipher, secrets stay as stored (sealed)."""
    if cipher is None:
        return target
    opened = with_secrets(target, lambda value: _opened(value, cipher))
    return replace(opened, url=open_url(opened.url, cipher))
