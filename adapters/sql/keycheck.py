"""One secret key per database: every worker sharing a database must seal and open header
secrets with the same key, or it could call none of the endpoints another worker declared.

The first store opened with a cipher leaves a token sealed with its key in `cronpilot_meta`;
a store whose cipher cannot open that token refuses to start, naming the setting to fix.
"""

from __future__ import annotations

import logging

from sqlalchemy import select

from cronpilot.adapters.crypto import KeyFileCipher, SecretKeyMissing, SecretUndecryptable
from cronpilot.adapters.sql.engine import Database
from cronpilot.adapters.sql.tables import meta
from cronpilot.adapters.sql.upsert import conflict_insert
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.ports import SecretCipher

logger = logging.getLogger(__name__)

_KEY_CHECK_TEXT = "cronpilot secret key check"
_META_ROW = 1


async def verify_secret_key(db: Database, cipher: SecretCipher) -> None:
    """Record a token sealed by `cipher` on the database's first use with a key; later, raise
    `InvalidConfig` unless `cipher` opens the recorded token (`SecretKeyMissing` when there is
    no key to open it with)."""
    # Read first: every command checks the key, and on SQLite a write transaction would take
    # the database's write lock (and wait behind a busy worker) for a row written only once.
    recorded = select(meta.c.key_check).where(meta.c.id == _META_ROW)
    async with db.read() as conn:
        token = (await conn.execute(recorded)).scalar_one_or_none()
    if token is None:
        if isinstance(cipher, KeyFileCipher) and not cipher.has_key():
            # Nothing can have been sealed yet: the first secret sealed makes the key, and the
            # next store opened records it. A store that only reads makes none.
            return
        async with db.write() as conn:
            # Workers starting together on a fresh database: the first insert wins, the others
            # check against it.
            await conn.execute(
                conflict_insert(db.dialect, meta)
                .values(id=_META_ROW, key_check=cipher.encrypt(_KEY_CHECK_TEXT))
                .on_conflict_do_nothing(index_elements=[meta.c.id])
            )
            token = (await conn.execute(recorded)).scalar_one()
    try:
        same_key = cipher.decrypt(token) == _KEY_CHECK_TEXT
    except SecretKeyMissing:
        raise
    except SecretUndecryptable:
        same_key = False
    if not same_key:
        logger.error("secret key differs from the database's", extra=log_extra("key_check"))
        raise InvalidConfig(
            "CRONPILOT_SECRET_KEY",
            "this database's header secrets were written with a different key; set "
            "CRONPILOT_SECRET_KEY to the key used by the other workers",
        )
