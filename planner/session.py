"""One analysis session with an LLM: the chat-completions loop over the planner's tools, within
a step budget, a token budget and a deadline; the last step is forced to `submit_analysis`."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol

from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.model import JSON
from cronpilot.domain.planning.planning import ChatReply, SessionStatus
from cronpilot.domain.ports.planner import ChatModel
from cronpilot.planner.brief import SYSTEM_PROMPT
from cronpilot.planner.tools import SUBMIT, ToolBox, ToolKind

log = logging.getLogger(__name__)

NUDGE = "Answer with tool calls only; end the analysis with submit_analysis."
SILENT_LIMIT = 2
"""Answers in a row without a tool call after which the model is taken not to use tools (it
was nudged after the first): the session fails, and the endpoint backs off as for an outage,
instead of spending every step, every time, on a model that only writes text."""
OUT_OF_TIME = "cut short: the session's time ran out before its analysis lease would"


@dataclass(frozen=True, slots=True)
class Verdict:
    """How a session ended."""

    status: SessionStatus
    reasoning: str = ""
    confidence: float | None = None
    look_again_seconds: float | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None


class Analyst(Protocol):
    """Looks at one endpoint through a toolbox and says when to look again."""

    @property
    def name(self) -> str:
        """Recorded as the proposer: `freshness`, `llm:<model>`."""
        ...

    @property
    def yields_to_rules(self) -> bool:
        """Whether a response rule that holds for the endpoint keeps the analyst from looking
        (the built-in planner), or the analyst looks and a guardrail refuses what contradicts
        the rule (the LLM, which may see more than the rule does)."""
        ...

    async def analyse(self, brief: str, toolbox: ToolBox) -> Verdict: ...


def submitted(toolbox: ToolBox, prompt_tokens: int = 0, completion_tokens: int = 0) -> Verdict:
    """The verdict of a session that ended with a valid `submit_analysis`."""
    final = toolbox.submitted
    assert final is not None
    return Verdict(
        SessionStatus.SUBMITTED,
        final.reasoning,
        final.confidence,
        final.next_analysis_in_seconds,
        prompt_tokens,
        completion_tokens,
    )


def _assistant_message(reply: ChatReply) -> JSON:
    message: dict[str, JSON] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in reply.tool_calls
        ]
    return message


class LlmAnalyst:
    def __init__(
        self,
        chat: ChatModel,
        max_steps: int,
        max_tokens: int,
        tool_kinds: tuple[ToolKind, ...] = tuple(ToolKind),
    ) -> None:
        self._chat = chat
        self._max_steps = max_steps
        self._max_tokens = max_tokens
        self._tool_kinds = tool_kinds

    @property
    def name(self) -> str:
        return self._chat.name

    @property
    def yields_to_rules(self) -> bool:
        return False

    async def analyse(self, brief: str, toolbox: ToolBox) -> Verdict:
        """Raises `LlmUnavailable` when the model cannot be reached."""
        messages: list[JSON] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": brief},
        ]
        tools = toolbox.definitions(self._tool_kinds)
        prompt = completion = silent = 0
        context = toolbox.context
        for step in range(self._max_steps):
            left = None
            if context.deadline is not None:
                left = (context.deadline - context.now()).total_seconds()
            if left is not None and left <= 0:
                log.warning(
                    "analysis of %s ran out of time after %d steps",
                    toolbox.endpoint.ref,
                    step,
                    extra=log_extra("analysis_out_of_time", endpoint_id=toolbox.endpoint.id),
                )
                return Verdict(
                    SessionStatus.FAILED,
                    error=OUT_OF_TIME,
                    prompt_tokens=prompt,
                    completion_tokens=completion,
                )
            last = step == self._max_steps - 1 or prompt + completion >= self._max_tokens
            reply = await self._chat.complete(
                messages, tools, SUBMIT if last else None, seconds=left
            )
            prompt += reply.prompt_tokens
            completion += reply.completion_tokens
            messages.append(_assistant_message(reply))
            silent = 0 if reply.tool_calls else silent + 1
            if silent >= SILENT_LIMIT:
                return Verdict(
                    SessionStatus.FAILED,
                    error=f"the model answered {silent} times in a row without calling a tool",
                    prompt_tokens=prompt,
                    completion_tokens=completion,
                )
            if not reply.tool_calls:
                toolbox.errors += 1
                messages.append({"role": "user", "content": NUDGE})
            for call in reply.tool_calls:
                result = await toolbox.call(call.name, call.arguments)
                messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": result.content}
                )
            if toolbox.submitted is not None:
                return submitted(toolbox, prompt, completion)
            if last:
                break
        log.warning(
            "analysis of %s ended without submit_analysis",
            toolbox.endpoint.ref,
            extra=log_extra("budget_exhausted", endpoint_id=toolbox.endpoint.id),
        )
        return Verdict(
            SessionStatus.EXHAUSTED,
            "the step or token budget ran out before a valid submit_analysis",
            prompt_tokens=prompt,
            completion_tokens=completion,
        )
