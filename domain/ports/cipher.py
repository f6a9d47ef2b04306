"""Secret header values at rest."""

from __future__ import annotations

from typing import Protocol


class SecretCipher(Protocol):
    """Encrypts secret header values at rest."""

    def encrypt(self, plaintext: str) -> str: ...

    def decrypt(self, token: str) -> str: ...
