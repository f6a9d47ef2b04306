"""A DAG of existing endpoints for an intent (seed 003's DAG suggester): hybrid search for the
candidates, the tool graph's edges among them for the order (declared dependencies, provides,
observed sequences), the strongest first, and any edge that would close a cycle refused. What
it returns is a proposal to read: nothing is applied."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from cronpilot.domain.graph.graph import EdgeType, find_cycle
from cronpilot.domain.ports import Embedder, JobDeclaration, ReadingFactory
from cronpilot.domain.search.search import SearchResult
from cronpilot.usecases.declarations import export_declarations
from cronpilot.usecases.search import search_endpoints

CANDIDATES = 6
"""The most endpoints a suggested DAG holds."""
KEEP_SHARE = 0.5
"""A candidate scores at least this share of the best hit's score."""
ORDERING = (EdgeType.DEPENDENCY, EdgeType.PROVIDES, EdgeType.SEQUENCE)
_STEP = re.compile(r"[,;.]|\bthen\b|\band\b", re.IGNORECASE)
MIN_STEP_WORDS = 2


def _steps(intent: str) -> list[str]:
    """The steps of a pipeline told in one sentence, those of at least `MIN_STEP_WORDS`."""
    parts = (" ".join(p.split()) for p in _STEP.split(intent))
    steps = [p for p in parts if len(p.split()) >= MIN_STEP_WORDS]
    return steps if len(steps) > 1 else []


@dataclass(frozen=True, slots=True)
class DagEdge:
    upstream: str
    dependant: str
    """Endpoint names in the job."""
    kind: EdgeType
    confidence: float


@dataclass(frozen=True, slots=True)
class DagSuggestion:
    job: str
    declaration: JobDeclaration
    """The job's chosen endpoints with `depends_on` as suggested: a jobs-file fragment."""
    edges: list[DagEdge]
    refused: list[tuple[DagEdge, list[str]]]
    """Edges left out, each with the cycle it would have closed."""
    found: SearchResult


async def suggest_dag(
    reading: ReadingFactory, embedder: Embedder | None, intent: str, job: str | None = None
) -> DagSuggestion | None:
    """The DAG for `intent` in `job` (else in the best hit's job); None when nothing matches.
    Raises `InvalidQuery`, `JobNotFound`."""
    found = await search_endpoints(reading, embedder, intent, job=job, limit=CANDIDATES * 3)
    if not found.hits:
        return None
    chosen_job = job or found.hits[0].ref.split("/", 1)[0]
    best = found.hits[0].score
    refs = [h.ref for h in found.hits if h.score >= KEEP_SHARE * best]
    # A pipeline is told step by step ("fetch the orders, clean them, then load them"): the
    # best endpoint for each step joins, though the whole intent ranks it lower.
    for step in _steps(intent):
        hits = (await search_endpoints(reading, embedder, step, job=chosen_job, limit=1)).hits
        refs += [h.ref for h in hits]
    names = list(dict.fromkeys(r.split("/", 1)[1] for r in refs if r.startswith(f"{chosen_job}/")))[
        :CANDIDATES
    ]
    [declared] = await export_declarations(reading, chosen_job)
    async with reading() as read:
        edges = await read.graph.list_edges(chosen_job)
    specs = {s.name: s for s in declared.endpoints}
    prefix = f"{chosen_job}/"
    strongest: dict[tuple[str, str], DagEdge] = {}
    for edge in edges:
        up, down = edge.from_node.removeprefix(prefix), edge.to_node.removeprefix(prefix)
        if edge.type not in ORDERING or up not in names or down not in names or up == down:
            continue
        confidence = round(edge.weight * (edge.confidence or 1.0), 3)
        known = strongest.get((up, down))
        if known is None or confidence > known.confidence:
            strongest[(up, down)] = DagEdge(up, down, edge.type, confidence)
    # The declared upstreams of a chosen endpoint stay, and come along (a fragment's
    # `depends_on` names endpoints of the fragment).
    for name in list(names):
        for up in specs[name].depends_on:
            if up not in names:
                names.append(up)
            strongest[(up, name)] = DagEdge(up, name, EdgeType.DEPENDENCY, 1.0)
    upstreams: dict[str, list[str]] = {name: [] for name in names}
    kept: list[DagEdge] = []
    refused: list[tuple[DagEdge, list[str]]] = []
    ordered = sorted(strongest.values(), key=lambda e: (-e.confidence, e.upstream, e.dependant))
    for link in ordered:
        trial = {**upstreams, link.dependant: [*upstreams[link.dependant], link.upstream]}
        cycle = find_cycle(trial)
        if cycle is None:
            upstreams = trial
            kept.append(link)
        else:
            refused.append((link, cycle))
    fragment = JobDeclaration(
        declared.job,
        [replace(specs[name], depends_on=tuple(sorted(upstreams[name]))) for name in names],
    )
    return DagSuggestion(chosen_job, fragment, kept, refused, found)
