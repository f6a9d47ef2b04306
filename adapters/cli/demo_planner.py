"""The planner's part of the demo summary: per endpoint, what the heuristic planner proposed,
what became of it, and the last reason, read back from the database."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from cronpilot.adapters.cli.planner_views import change_text
from cronpilot.domain.planning import Proposal
from cronpilot.domain.ports import Store
from cronpilot.usecases.queries.catalog import endpoint_refs
from cronpilot.usecases.queries.planner import list_proposals

_ALL_PROPOSALS = 10_000


@dataclass(frozen=True, slots=True)
class PlannerLine:
    ref: str
    statuses: Counter[str]
    last: Proposal

    def text(self) -> str:
        counts = ", ".join(f"{count} {status}" for status, count in sorted(self.statuses.items()))
        last = self.last
        return (
            f"planner {self.ref}: {sum(self.statuses.values())} proposals ({counts}); "
            f"last: {change_text(last)} {last.status.value}: {last.reason}"
        )


async def planner_lines(store: Store) -> list[PlannerLine]:
    refs = await endpoint_refs(store.reading)
    newest_first = await list_proposals(store.reading, limit=_ALL_PROPOSALS)
    lines: dict[str, PlannerLine] = {}
    for proposal in newest_first.items:
        ref = refs.get(proposal.endpoint_id, "?")
        line = lines.setdefault(ref, PlannerLine(ref, Counter(), proposal))
        line.statuses[proposal.status.value] += 1
    return [lines[ref] for ref in sorted(lines)]
