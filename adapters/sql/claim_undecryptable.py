"""A claimed run whose endpoint's secret header cannot be opened: it fails at once.

Both kinds of claim (`slot_claims`, `queued_claims`) end such a run the same way, so the
batch goes ahead without it."""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from cronpilot.adapters.sql.notifications_repo import add_notifications
from cronpilot.adapters.sql.rows import save_endpoint_state
from cronpilot.adapters.sql.run_places import save_run
from cronpilot.domain.alerts.alerts import run_notifications
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.model import BodyAbsence, Endpoint, ErrorKind, Response, Run
from cronpilot.domain.ports import SecretCipher
from cronpilot.domain.runs.transitions import after_run, finished_run

logger = logging.getLogger(__name__)

UNDECRYPTABLE_MESSAGE = (
    "not called: a secret header cannot be decrypted with this worker's key "
    "(CRONPILOT_SECRET_KEY differs from the key that stored it)"
)


async def fail_undecryptable(
    conn: AsyncConnection,
    cipher: SecretCipher | None,
    sealed: Endpoint,
    running: Run,
    now: datetime,
) -> None:
    """A secret header of this endpoint cannot be opened with our key, so it cannot be
    called: its run fails at once with the reason, and the endpoint is planned past the slot
    (backing off like any failure; a queued run only frees it) while the rest of the batch
    goes ahead. `sealed` keeps
    its headers as stored, and only its schedule state is saved, so the secrets survive."""
    logger.error(
        "cannot open a secret header of %s; run failed",
        sealed.ref,
        extra=log_extra("claim_undecryptable", endpoint_id=sealed.id, run_id=running.id),
    )
    failure = Response(
        status_code=None,
        body_absence=BodyAbsence.NO_RESPONSE,
        error_kind=ErrorKind.INTERNAL,
        error_message=UNDECRYPTABLE_MESSAGE,
        started_at=now,
        finished_at=now,
    )
    run = finished_run(running, failure, now)
    await save_run(conn, run)
    ended = after_run(sealed, running, False, now)
    await save_endpoint_state(conn, ended)
    await add_notifications(conn, run_notifications(sealed, ended, run, now), cipher)
