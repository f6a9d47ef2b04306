"""A proposal superseded by a newer one, for the tests of every interface that shows or decides
proposals (issue 21)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from cronpilot.domain.model import PlannerMode
from cronpilot.domain.planning.planning import Proposal
from cronpilot.domain.ports import Store
from cronpilot.usecases.proposals import ProposalDesk, Proposer
from tests.support.settings import limits_for_tests


async def supersede(store: Store, proposal_id: str, now: datetime) -> Proposal:
    """The same change proposed again for review (by another reason), which supersedes the
    pending proposal `proposal_id`."""
    older = await store.planner.get_proposal(proposal_id)
    desk = ProposalDesk(store.unit_of_work, store.reading, None, limits_for_tests())
    draft = replace(older.draft, reason="asked again")
    return await desk.propose(draft, older.endpoint_id, Proposer("llm:m", PlannerMode.REVIEW), now)
