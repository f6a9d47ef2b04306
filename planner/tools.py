"""The planner's tools (seed 002): query tools read the analysed endpoint's and its siblings'
runs — `get_latest_response`, `get_response_history` (at most 50), `get_sibling_latest_responses`
— and `find_endpoints` finds the job's endpoints for an intent (hybrid search: semantic with
the worker's embedder, lexical and graph); action tools propose changes to the analysed
endpoint only; `submit_analysis` ends the session. The brief already sums up the newest
responses of the most relevant siblings, within a token budget. Each definition is sent with
every step, so descriptions are a few words, and `find_endpoints` and
`get_sibling_latest_responses` are offered only where they can tell more than the brief:
where its budget left siblings out.

Every call is recorded (arguments, duration, result size, error). A call to an unknown tool,
with arguments that do not validate, or naming another endpoint for an action is answered as a
tool error the model can correct, and counted. Adding a tool is one `ToolSpec` in `TOOLS`.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ValidationError

from cronpilot.domain.errors import CronpilotError
from cronpilot.domain.graph.change_detection import comparable_hash, ignored_fields
from cronpilot.domain.graph.graph import Edge
from cronpilot.domain.model import JSON, Endpoint, PlannerMode, Run
from cronpilot.domain.planning.context import related_siblings
from cronpilot.domain.planning.controllers import Held
from cronpilot.domain.planning.planning import (
    AnalysisClaim,
    Proposal,
    ProposalDraft,
    ProposalKind,
    ToolCallRecord,
    proposal_outcome,
)
from cronpilot.domain.ports.bundles import ToolStore
from cronpilot.domain.ports.search import Embedder
from cronpilot.planner.projection import DEFAULT_MAX_BODY_CHARS, capped, project
from cronpilot.planner.tool_args import (
    FindArgs,
    HistoryArgs,
    IntervalArgs,
    NextTimeArgs,
    PauseArgs,
    ReadArgs,
    SiblingsArgs,
    SubmitArgs,
)
from cronpilot.planner.tool_schema import strict_schema
from cronpilot.usecases.proposals import ProposalDesk, Proposer

SUBMIT = "submit_analysis"
SIBLINGS = "get_sibling_latest_responses"
FIND = "find_endpoints"
FOUND = 5
"""Endpoints `find_endpoints` answers with."""
HISTORY_READS = 4
"""`get_response_history` calls one session may make: a model that reads on and on spends
the step budget and tokens without deciding."""
DEFERRED = "deferred: proposed at submit_analysis, decided by its confidence"


class ToolKind(StrEnum):
    QUERY = "query"
    ACTION = "action"
    FINAL = "final"


class ToolError(Exception):
    """A mistake the model can correct; its message is the tool's answer."""


@dataclass(frozen=True, slots=True)
class ToolResult:
    data: JSON
    error: str | None = None
    content: str = field(init=False)
    """What the model reads: encoded once, as both the call's record (its size) and the
    model's message need it."""

    def __post_init__(self) -> None:
        shown = {"error": self.error} if self.error is not None else self.data
        text = json.dumps(shown, ensure_ascii=False, separators=(",", ":"), default=str)
        object.__setattr__(self, "content", text)


Handler = Callable[["ToolBox", Any], Awaitable[JSON]]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    kind: ToolKind
    description: str
    arguments: type[BaseModel]
    handler: Handler

    def definition(self) -> JSON:
        """The chat-completions `tools` entry."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "strict": True,
                "parameters": _parameters(self.arguments),
            },
        }


@functools.cache
def _parameters(arguments: type[BaseModel]) -> JSON:
    # Once per argument model (the result is shared: read it, do not change it). pydantic
    # builds the JSON Schema afresh on every call, and every LLM session asks for all the
    # definitions: about a quarter of the planner's own time per session.
    return strict_schema(arguments)


@dataclass(slots=True)
class ToolContext:
    """Everything the tools of one session may touch."""

    claim: AnalysisClaim
    siblings: Mapping[str, Endpoint]
    """The job's endpoints by name, the analysed one included."""
    store: ToolStore
    desk: ProposalDesk
    proposer: Proposer
    now: Callable[[], datetime]
    max_body_chars: int = DEFAULT_MAX_BODY_CHARS
    edges: Sequence[Edge] = ()
    """The job's graph: `find_endpoints` and the siblings' order read it."""
    summed_up: Collection[str] | None = None
    """The siblings the brief sums up (None: all of them)."""
    embedder: Embedder | None = None
    """`find_endpoints`'s semantic leg (None: lexical and graph only)."""
    budget: str | None = None
    """The job's budget of calls (`Job.budget`) the built-in planner splits."""
    deadline: datetime | None = None
    """When the session must have ended, well before its analysis lease does (the worker's
    `session_deadline`): the LLM loop takes no step and no retry past it."""

    def ranked_siblings(self) -> list[Endpoint]:
        """The job's other endpoints, most related to the analysed one first."""
        endpoint = self.claim.endpoint
        return related_siblings(endpoint, list(self.siblings.values()), self.edges, self.now())


@dataclass(slots=True)
class ToolBox:
    context: ToolContext
    tools: Mapping[str, ToolSpec] = field(default_factory=lambda: TOOLS)
    calls: list[ToolCallRecord] = field(default_factory=list)
    errors: int = 0
    submitted: SubmitArgs | None = None
    deferred: list[ProposalDraft] = field(default_factory=list)
    """Graded mode: the actions asked for, proposed at `submit_analysis` with its confidence."""
    history_reads: int = 0
    made: int = 0
    """Proposals recorded by the session's actions (a session that made none may be quiet:
    `domain.schedule.quiet_passes`)."""
    held: int = 0
    """Actions a higher controller or a dwell held back: news, so the session is stored."""
    noted: str | None = None
    """What the call under way did, in words, as its handler notes it for the call's record."""

    @property
    def endpoint(self) -> Endpoint:
        return self.context.claim.endpoint

    def definitions(self, kinds: Sequence[ToolKind] = tuple(ToolKind)) -> list[JSON]:
        return [
            tool.definition()
            for tool in self.tools.values()
            if tool.kind in kinds and self._offered(tool.name)
        ]

    def _offered(self, name: str) -> bool:
        """Whether a tool can tell more than the brief: the siblings' newest runs, and finding
        endpoints, only where the brief's budget left siblings out (every definition is paid on
        every step). A call to one not offered is still answered."""
        if name in (SIBLINGS, FIND):
            shown = self.context.summed_up
            return shown is not None and len(shown) < len(self.context.siblings) - 1
        return True

    async def call(self, name: str, arguments: str | Mapping[str, Any]) -> ToolResult:
        """Run one tool call as the model wrote it; never raises for the model's mistakes."""
        started = time.perf_counter()
        recorded: JSON = arguments
        self.noted = None
        try:
            tool = self.tools.get(name)
            if tool is None:
                raise ToolError(f"unknown tool {name!r}; the tools are: {', '.join(self.tools)}")
            parsed = _decoded(arguments)
            recorded = parsed
            try:
                args = tool.arguments.model_validate(parsed)
            except ValidationError as exc:
                raise ToolError(_validation_message(exc)) from None
            result = ToolResult(await tool.handler(self, args))
        except ToolError as exc:
            self.errors += 1
            result = ToolResult(None, str(exc))
        self.calls.append(
            ToolCallRecord(
                seq=len(self.calls) + 1,
                name=name,
                arguments=recorded,
                duration_ms=(time.perf_counter() - started) * 1000,
                result_chars=len(result.content),
                error=result.error,
                outcome=self.noted if result.error is None else None,
            )
        )
        return result

    def readable(self, name: str | None) -> Endpoint:
        """The analysed endpoint, or the sibling called `name` (job/name also accepted)."""
        if name is None:
            return self.endpoint
        short = name.removeprefix(f"{self.endpoint.job_name}/")
        found = self.context.siblings.get(short)
        if found is None:
            known = ", ".join(sorted(self.context.siblings))
            raise ToolError(
                f"endpoint {name!r} is not in job {self.endpoint.job_name!r}; readable: {known}"
            )
        return found

    def view(self, run: Run, fields: list[str] | None, endpoint: Endpoint) -> JSON:
        """A run of `endpoint` as the model sees it: metadata, and the body projected and
        capped. Its `body_hash` leaves out what does not count as a change (`change_detection`):
        equal hashes are the same answer."""
        shown: dict[str, Any] = {
            "slot_at": run.slot_at.isoformat(),
            "status": run.status.value,
            "status_code": run.status_code,
            "duration_ms": None if run.duration_ms is None else round(run.duration_ms, 1),
            "body_hash": comparable_hash(run, ignored_fields(endpoint)),
        }
        if run.error_kind is not None:
            shown["error"] = run.error_kind.value
        if run.body_absence is not None:
            shown["no_body"] = run.body_absence.value
        elif fields is None:
            shown["body"] = capped(run.body, self.context.max_body_chars)
        elif fields:
            try:
                shown["fields"] = capped(project(run.body, fields), self.context.max_body_chars)
            except ValueError as exc:
                raise ToolError(str(exc)) from None
        return shown


def _decoded(arguments: str | Mapping[str, Any]) -> Any:
    if not isinstance(arguments, str):
        return dict(arguments)
    try:
        return json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError as exc:
        raise ToolError(f"arguments are not valid JSON ({exc.msg} at {exc.pos})") from None


def _validation_message(exc: ValidationError) -> str:
    problems = [
        f"{'.'.join(str(part) for part in error['loc']) or 'arguments'}: {error['msg']}"
        for error in exc.errors()
    ]
    return "invalid arguments: " + "; ".join(problems)


# --- query tools ------------------------------------------------------------------------------


def _count_read(box: ToolBox) -> None:
    if box.history_reads >= HISTORY_READS:
        raise ToolError(
            f"read cap reached ({HISTORY_READS} per analysis): decide from what you "
            "have read and end with submit_analysis"
        )
    box.history_reads += 1


async def _latest(box: ToolBox, args: ReadArgs) -> JSON:
    _count_read(box)
    endpoint = box.readable(args.endpoint)
    runs = await box.context.store.runs.list_runs(endpoint.id, 1)
    return {
        "endpoint": endpoint.name,
        "run": box.view(runs[0], args.fields, endpoint) if runs else None,
    }


async def _history(box: ToolBox, args: HistoryArgs) -> JSON:
    _count_read(box)
    endpoint = box.readable(args.endpoint)
    runs = await box.context.store.runs.list_runs(endpoint.id, args.limit)
    return {
        "endpoint": endpoint.name,
        "runs": [box.view(run, args.fields, endpoint) for run in runs],
    }


async def _siblings(box: ToolBox, args: SiblingsArgs) -> JSON:
    """The newest run of every sibling, most relevant first."""
    _count_read(box)
    others = [e for e in box.context.ranked_siblings() if e.id != box.endpoint.id]
    latest = await box.context.store.runs.latest_runs([e.id for e in others])
    return {e.name: box.view(latest[e.id], args.fields, e) for e in others if e.id in latest}


async def _find(box: ToolBox, args: FindArgs) -> JSON:
    """The job's endpoints that best answer `intent`, best first: the hybrid search of
    `cronpilot search` over the job, with the analysed endpoint as its graph context."""
    from cronpilot.usecases.search import search_endpoints

    context = box.context
    try:
        found = await search_endpoints(
            context.store.reading,
            context.embedder,
            args.intent,
            job=box.endpoint.job_name,
            limit=FOUND,
            context=[box.endpoint.ref],
        )
    except CronpilotError as exc:
        raise ToolError(str(exc)) from None
    hits = found.hits
    return {"endpoints": [{"name": h.ref.split("/", 1)[1], "score": h.score} for h in hits]}


# --- action tools -----------------------------------------------------------------------------


async def _propose(box: ToolBox, draft: ProposalDraft) -> JSON:
    endpoint = box.endpoint
    context = box.context
    why_not = await context.desk.unneeded(draft, endpoint.id, context.now())
    if isinstance(why_not, Held):
        box.held += 1
        why_not = why_not.text
    if why_not is None and draft in box.deferred:
        why_not = "already proposed in this analysis"
    if why_not is not None:
        box.noted = f"not made: {why_not}"
        return {"status": "not_made", "outcome": why_not}
    if context.proposer.mode is PlannerMode.GRADED:
        # Graded: the analysis's confidence decides, and it is known at submit_analysis.
        box.deferred.append(draft)
        box.noted = DEFERRED
        return {"status": "deferred", "outcome": DEFERRED}
    proposal = await context.desk.propose(draft, endpoint.id, context.proposer, context.now())
    box.made += 1
    box.noted = proposal_outcome(proposal)
    return _shown(proposal)


def _shown(proposal: Proposal) -> JSON:
    return {
        "proposal_id": proposal.id,
        "status": proposal.status.value,
        "outcome": proposal.outcome,
    }


async def _propose_interval(box: ToolBox, args: IntervalArgs) -> JSON:
    draft = ProposalDraft(
        ProposalKind.INTERVAL,
        args.reason,
        interval_seconds=args.interval_seconds,
        ttl_seconds=args.ttl_seconds,
    )
    return await _propose(box, draft)


async def _propose_next_time(box: ToolBox, args: NextTimeArgs) -> JSON:
    draft = ProposalDraft(
        ProposalKind.NEXT_TIME, args.reason, at=args.at, ttl_seconds=args.ttl_seconds
    )
    return await _propose(box, draft)


async def _pause_until(box: ToolBox, args: PauseArgs) -> JSON:
    kind = ProposalKind.RESUME if args.until is None else ProposalKind.PAUSE
    return await _propose(box, ProposalDraft(kind, args.reason, at=args.until))


async def _submit(box: ToolBox, args: SubmitArgs) -> JSON:
    """Ends the session; in graded mode, the proposals deferred until now are made with the
    analysis's confidence."""
    box.submitted = args
    context = box.context
    proposer = replace(context.proposer, confidence=args.confidence)
    made = [
        await context.desk.propose(draft, box.endpoint.id, proposer, context.now())
        for draft in box.deferred
    ]
    box.deferred.clear()
    box.made += len(made)
    box.noted = "; ".join(["analysis submitted", *(proposal_outcome(p) for p in made)])
    if not made:
        return {"ok": True}
    return {"ok": True, "proposals": [_shown(p) for p in made]}


TOOLS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec("get_latest_response", ToolKind.QUERY, "Newest run.", ReadArgs, _latest),
        ToolSpec(
            "get_response_history",
            ToolKind.QUERY,
            "Runs, newest first.",
            HistoryArgs,
            _history,
        ),
        ToolSpec(
            SIBLINGS,
            ToolKind.QUERY,
            "Siblings' newest runs.",
            SiblingsArgs,
            _siblings,
        ),
        ToolSpec(FIND, ToolKind.QUERY, "Siblings for an intent.", FindArgs, _find),
        ToolSpec(
            "propose_interval",
            ToolKind.ACTION,
            "Run every interval_seconds.",
            IntervalArgs,
            _propose_interval,
        ),
        ToolSpec(
            "propose_next_time",
            ToolKind.ACTION,
            "Run once at a time.",
            NextTimeArgs,
            _propose_next_time,
        ),
        ToolSpec(
            "pause_until",
            ToolKind.ACTION,
            "Pause until a time.",
            PauseArgs,
            _pause_until,
        ),
        ToolSpec(
            SUBMIT,
            ToolKind.FINAL,
            "End the analysis.",
            SubmitArgs,
            _submit,
        ),
    )
}
