"""An OpenAI-compatible chat-completions server on 127.0.0.1 that replays a script, for driving
the real `openai` SDK in tests: tool calls (well-formed or not, with or without ids), plain text
(tool calls written in it, as servers without a tool parser send them), HTTP errors with
headers (429 + Retry-After, 500), slow answers, answers that never come, bodies that are not
chat completions, and usage figures counted from the request. It also serves `/embeddings`:
a bag of words hashed into `EMBEDDING_DIMENSIONS` buckets (texts sharing words are alike), or
the HTTP status `embeddings_failure` when set.

A script step is a reply, or a function of the request body returning one (a "policy" that
reads the tool results so far). Every request body is kept in `requests`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.support.loopback import LoopbackServer

Request = dict[str, Any]
CHARS_PER_TOKEN = 4
EMBEDDING_DIMENSIONS = 64


def hashed_embedding(text: str) -> list[float]:
    """A deterministic vector: one count per word in the bucket its hash picks."""
    import zlib

    vector = [0.0] * EMBEDDING_DIMENSIONS
    for word in text.lower().replace("_", " ").split():
        vector[zlib.crc32(word.strip(".,:;?!").encode()) % EMBEDDING_DIMENSIONS] += 1.0
    return vector


@dataclass(frozen=True)
class Call:
    """One tool call; `arguments` as a dict is sent as JSON, as a str exactly as given."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)


@dataclass(frozen=True)
class Calls:
    calls: Sequence[Call]
    content: str | None = None
    ids: bool = True
    """False: the calls come without ids, as some llama.cpp and Ollama versions send them."""


@dataclass(frozen=True)
class Text:
    content: str


@dataclass(frozen=True)
class Failure:
    status: int
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Slow:
    seconds: float
    then: Reply


@dataclass(frozen=True)
class Hang:
    """No answer at all: the request waits until the client gives up or the server closes."""


@dataclass(frozen=True)
class Raw:
    """A 200 answer with this body as it is: not JSON, or JSON that is no chat completion."""

    body: str


Reply = Calls | Text | Failure | Slow | Hang | Raw
Step = Reply | Callable[[Request], Reply]


def tokens(value: Any) -> int:
    return math.ceil(len(json.dumps(value, separators=(",", ":"))) / CHARS_PER_TOKEN)


def tool_results(request: Request) -> list[Any]:
    """The decoded contents of the request's tool messages, oldest first."""
    return [json.loads(m["content"]) for m in request["messages"] if m["role"] == "tool"]


def submit(reasoning: str = "done", confidence: float = 0.9, again: float = 60) -> Calls:
    arguments = {
        "reasoning": reasoning,
        "confidence": confidence,
        "next_analysis_in_seconds": again,
    }
    return Calls([Call("submit_analysis", arguments)])


class FakeOpenAI(LoopbackServer):
    def __init__(self, script: Sequence[Step] | Callable[[Request], Reply]) -> None:
        self._script = script
        self._position = 0
        self._ids = itertools.count(1)
        self.requests: list[Request] = []
        self._arrived = asyncio.Event()
        self.usage: list[tuple[int, int]] = []
        self.embedded: list[list[str]] = []
        """The texts of every `/embeddings` request."""
        self.embeddings_failure: int | None = None
        self.models: list[str] = ["fake-model"]
        """What `GET /models` lists."""

    def _next(self, request: Request) -> Reply:
        if callable(self._script):
            return self._script(request)
        if self._position >= len(self._script):
            return Failure(400)
        step = self._script[self._position]
        self._position += 1
        return step(request) if callable(step) else step

    async def until_requests(self, count: int) -> None:
        """Wait until `count` requests have come (bound it with `asyncio.timeout`)."""
        while len(self.requests) < count:
            self._arrived.clear()
            await self._arrived.wait()

    async def _complete(self, http: web.Request) -> web.StreamResponse:
        request: Request = await http.json()
        self.requests.append(request)
        self._arrived.set()
        reply = self._next(request)
        while isinstance(reply, Slow):
            await asyncio.sleep(reply.seconds)
            reply = reply.then
        if isinstance(reply, Hang):
            # Never set: the handler ends when the client gives up and cancels it.
            await asyncio.Event().wait()
            raise web.HTTPGatewayTimeout
        if isinstance(reply, Raw):
            return web.Response(text=reply.body, content_type="application/json")
        if isinstance(reply, Failure):
            error = {"error": {"message": f"scripted {reply.status}", "type": "scripted"}}
            return web.json_response(error, status=reply.status, headers=reply.headers)
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if isinstance(reply, Calls):
            message["tool_calls"] = [
                {
                    **({"id": f"call_{next(self._ids)}"} if reply.ids else {}),
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": call.arguments
                        if isinstance(call.arguments, str)
                        else json.dumps(call.arguments),
                    },
                }
                for call in reply.calls
            ]
        prompt = tokens(request["messages"]) + tokens(request.get("tools", []))
        completion = tokens(message)
        self.usage.append((prompt, completion))
        return web.json_response(
            {
                "id": f"chatcmpl-{len(self.requests)}",
                "object": "chat.completion",
                "created": 0,
                "model": request["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "tool_calls" if "tool_calls" in message else "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                },
            }
        )

    async def _embeddings(self, http: web.Request) -> web.StreamResponse:
        request: Request = await http.json()
        texts = request["input"] if isinstance(request["input"], list) else [request["input"]]
        self.embedded.append(texts)
        if self.embeddings_failure is not None:
            error = {"error": {"message": "scripted failure", "type": "scripted"}}
            return web.json_response(error, status=self.embeddings_failure)
        data = [
            {"object": "embedding", "index": i, "embedding": hashed_embedding(text)}
            for i, text in enumerate(texts)
        ]
        used = sum(tokens(text) for text in texts)
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "model": request["model"],
                "usage": {"prompt_tokens": used, "total_tokens": used},
            }
        )

    async def _models(self, _http: web.Request) -> web.StreamResponse:
        data = [
            {"id": name, "object": "model", "created": 0, "owned_by": "test"}
            for name in self.models
        ]
        return web.json_response({"object": "list", "data": data})

    @property
    def base_url(self) -> str:
        return self.url("/v1")

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._complete)
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_get("/v1/models", self._models)
        return app
