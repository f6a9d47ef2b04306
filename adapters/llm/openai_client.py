"""`ChatModel` over the official `openai` SDK, against any OpenAI-compatible `base_url`.

The SDK's own retries are off: tenacity retries rate limits (429), server errors (5xx),
timeouts and dropped connections, waiting as long as a `Retry-After` header asks (capped), else
exponentially, but never past the time the session gives an answer: a request's timeout is cut
to the time left, and a retry whose wait would end past it is not made. Anything else — or
giving up — is `LlmUnavailable`, and so is an answer that is not a chat completion (not JSON,
or JSON of another shape: the SDK builds its objects from whatever came without checking
them). The API key is never logged.

Every request asks for one tool call per answer (`parallel_tool_calls: false`) and for a tool
call at all (`tool_choice: "required"`, or the named tool when the session forces one). A server
that refuses such a `tool_choice` (HTTP 400 or 422) is asked again with `"auto"`, and from then
on only with `"auto"`; a server that ignores it (Ollama) is nudged by the session. Calls written
in the text, without ids, or with their arguments wrapped once too often are read as calls
(`content_calls`).
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence
from datetime import datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any

import openai
from openai import AsyncOpenAI
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception

from cronpilot.adapters.llm.content_calls import arguments_text, call_id, calls_in_content
from cronpilot.domain.errors import LlmUnavailable
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.model import JSON
from cronpilot.domain.planning.planning import ChatReply, ToolCallRequest
from cronpilot.domain.ports import ChatModel

log = logging.getLogger(__name__)

NO_KEY = "not-needed"
"""The SDK insists on a key; local servers usually ignore it."""
_NOT_A_COMPLETION = "the LLM server's answer is not a chat completion"
_NO_TIME_LEFT = "no time left for the answer in the session"


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, openai.APIConnectionError):  # timeouts included
        return True
    return isinstance(exc, openai.APIStatusError) and (
        exc.status_code == 429 or exc.status_code >= 500
    )


def retry_after_seconds(exc: BaseException | None) -> float | None:
    """The wait a `Retry-After` header asks for (seconds or an HTTP date), if any."""
    if not isinstance(exc, openai.APIStatusError):
        return None
    value = exc.response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    date = exc.response.headers.get("date")
    base = parsedate_to_datetime(date) if date else None
    return max((moment - base).total_seconds(), 0.0) if base is not None else None


def described(exc: BaseException, server: str = "LLM") -> str:
    """An error of the `openai` client in one line, naming the `server` (`LLM`, `embeddings`)
    and never the request, which may hold a key."""
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code} from the {server} server"
    if isinstance(exc, openai.APITimeoutError):
        return f"the {server} server did not answer in time"
    if isinstance(exc, openai.APIConnectionError):
        return f"could not connect to the {server} server"
    return f"{type(exc).__name__} from the {server} client"


class OpenAIChat(ChatModel):
    def __init__(
        self,
        *,
        model: str,
        base_url: str | None,
        api_key: str | None,
        timeout_seconds: float,
        attempts: int,
        sleep: Callable[[float], Awaitable[None]],
        now: Callable[[], datetime],
        backoff_seconds: float = 1.0,
        max_wait_seconds: float = 60.0,
    ) -> None:
        self._model = model
        self._client = AsyncOpenAI(
            base_url=base_url, api_key=api_key or NO_KEY, timeout=timeout_seconds, max_retries=0
        )
        self._timeout = timeout_seconds
        self._attempts = attempts
        self._sleep = sleep
        self._now = now
        self._backoff = backoff_seconds
        self._max_wait = max_wait_seconds
        self._choosing = True
        """Whether the server takes a `tool_choice` other than `"auto"`, until it refuses one."""
        self._made_up_ids = itertools.count(1)

    @property
    def name(self) -> str:
        return f"llm:{self._model}"

    def _wait(self, state: RetryCallState) -> float:
        asked = retry_after_seconds(state.outcome.exception() if state.outcome else None)
        if asked is None:
            asked = self._backoff * 2 ** (state.attempt_number - 1)
        return min(asked, self._max_wait)

    def _before_sleep(self, state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        log.warning(
            "LLM call failed (%s); retry %d in %.1f s",
            described(error) if error else "?",
            state.attempt_number,
            state.upcoming_sleep,
            extra=log_extra("llm_retry", attempt=state.attempt_number),
        )

    def _choice(self, force_tool: str | None) -> Any:
        if not self._choosing:
            return "auto"
        return {"type": "function", "function": {"name": force_tool}} if force_tool else "required"

    async def complete(
        self,
        messages: Sequence[JSON],
        tools: Sequence[JSON],
        force_tool: str | None = None,
        *,
        seconds: float | None = None,
    ) -> ChatReply:
        choice = self._choice(force_tool)
        deadline = None if seconds is None else self._now() + timedelta(seconds=seconds)
        try:
            try:
                completion = await self._create(messages, tools, choice, deadline)
            except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
                if choice == "auto":
                    raise
                log.warning(
                    "the LLM server refused tool_choice %s (%s): asking with auto from now on",
                    json.dumps(choice),
                    described(exc),
                    extra=log_extra("llm_tool_choice_refused"),
                )
                self._choosing = False
                completion = await self._create(messages, tools, "auto", deadline)
        except openai.OpenAIError as exc:
            raise LlmUnavailable(described(exc)) from exc
        except json.JSONDecodeError as exc:
            raise LlmUnavailable("the LLM server's answer is not valid JSON") from exc
        return _reply(completion, self._made_up_ids)

    def _seconds_left(self, deadline: datetime | None) -> float:
        """A request's timeout: the configured one, cut to the time left until `deadline`."""
        if deadline is None:
            return self._timeout
        left = (deadline - self._now()).total_seconds()
        if left <= 0:
            raise LlmUnavailable(_NO_TIME_LEFT)
        return min(self._timeout, left)

    async def _create(
        self,
        messages: Sequence[JSON],
        tools: Sequence[JSON],
        choice: Any,
        deadline: datetime | None,
    ) -> Any:
        out_of_time = False

        def stop(state: RetryCallState) -> bool:
            nonlocal out_of_time
            if state.attempt_number >= self._attempts:
                return True
            wait = timedelta(seconds=self._wait(state))
            out_of_time = deadline is not None and self._now() + wait >= deadline
            return out_of_time

        retrying = AsyncRetrying(
            retry=retry_if_exception(_transient),
            stop=stop,
            wait=self._wait,
            sleep=self._sleep,
            before_sleep=self._before_sleep,
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    completion = await self._client.chat.completions.create(
                        model=self._model,
                        messages=list(messages),
                        tools=list(tools),
                        tool_choice=choice,
                        parallel_tool_calls=False,
                        timeout=self._seconds_left(deadline),
                    )
        except openai.OpenAIError as exc:
            if out_of_time:
                raise LlmUnavailable(f"{described(exc)}, and {_NO_TIME_LEFT} to retry") from exc
            raise
        return completion

    async def close(self) -> None:
        await self._client.close()


def _reply(completion: Any, made_up_ids: Iterator[int]) -> ChatReply:
    """The reply a chat completion carries; `LlmUnavailable` when it carries none."""
    try:
        if not completion.choices:
            raise LlmUnavailable("the LLM server answered without a choice")
        message = completion.choices[0].message
        content = message.content
        calls = [
            ToolCallRequest(
                call_id(getattr(call, "id", None), made_up_ids),
                call.function.name,
                arguments_text(call.function.arguments),
            )
            for call in message.tool_calls or []
            if getattr(call, "type", "function") == "function"
        ]
        if not calls:
            calls = calls_in_content(content, made_up_ids)
            content = None if calls else content
        usage = completion.usage
        reply = ChatReply(
            content=content,
            tool_calls=calls,
            prompt_tokens=(usage.prompt_tokens or 0) if usage else 0,
            completion_tokens=(usage.completion_tokens or 0) if usage else 0,
        )
    except (AttributeError, TypeError, IndexError, KeyError) as exc:
        raise LlmUnavailable(_NOT_A_COMPLETION) from exc
    texts = [text for call in calls for text in (call.id, call.name, call.arguments)]
    counts = (reply.prompt_tokens, reply.completion_tokens)
    if (
        not isinstance(reply.content, str | None)
        or not all(isinstance(text, str) for text in texts)
        or not all(isinstance(count, int) for count in counts)
    ):
        raise LlmUnavailable(_NOT_A_COMPLETION)
    return reply
