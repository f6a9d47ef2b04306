"""Schedule changes that arrange a test's endpoint as the use cases make them: the endpoint
read for update, the domain's transition, the store's one write (`usecases.schedule`,
`usecases.proposals`)."""

from __future__ import annotations

from datetime import datetime

from cronpilot.domain.model import Endpoint, IntervalHint, OneShotHint, Pause
from cronpilot.domain.ports import CatalogRepository
from cronpilot.domain.runs.transitions import with_hints, with_pause


async def set_pause(
    catalog: CatalogRepository, endpoint_id: str, pause: Pause | None, now: datetime
) -> Endpoint:
    """The endpoint paused (or resumed, with None) and re-planned."""
    endpoint = await catalog.get_endpoint(endpoint_id, for_update=True)
    changed = with_pause(endpoint, pause, now)
    await catalog.save_schedule(changed)
    return changed


async def set_hints(
    catalog: CatalogRepository,
    endpoint_id: str,
    interval_hint: IntervalHint | None,
    oneshot_hint: OneShotHint | None,
    now: datetime,
) -> Endpoint:
    """Both hints replaced and the endpoint re-planned."""
    endpoint = await catalog.get_endpoint(endpoint_id, for_update=True)
    changed = with_hints(endpoint, interval_hint, oneshot_hint, now)
    await catalog.save_schedule(changed)
    return changed
