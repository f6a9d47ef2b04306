"""Recording one run, as tests do by hand: `ClaimRepository.finish_many` of one."""

from __future__ import annotations

from datetime import datetime

from cronpilot.domain.model import Claim, Finish, Recorded, Response, Run
from cronpilot.domain.ports import ClaimRepository

LEASE_SECONDS = 60.0


async def finish_one(
    claims: ClaimRepository, claim: Claim, worker_id: str, response: Response, now: datetime
) -> Run:
    """The run recorded for `claim`; raises its error (`LeaseLost`…) as the store returned it.
    The DAG dependants the run started are given back unrun, as by a worker that stopped
    before calling them: the test records only the run it names."""
    recorded = await record_one(claims, Finish(claim, worker_id, response, now, LEASE_SECONDS))
    for started in recorded.started:
        await claims.release(started, worker_id)
    return recorded.run


async def record_one(claims: ClaimRepository, finish: Finish) -> Recorded:
    """`finish` recorded, with the DAG dependants it started; raises its error."""
    [outcome] = await claims.finish_many([finish])
    if not isinstance(outcome, Recorded):
        raise outcome
    return outcome
