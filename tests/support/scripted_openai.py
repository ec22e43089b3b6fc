"""A scripted OpenAI-compatible chat-completions server for tests (streaming, like the real API).

Each request pops the next :class:`Turn` of the script and streams it as server-sent events the
way OpenAI does: a role chunk, content chunks, tool-call chunks whose ``arguments`` arrive split
across several chunks, a final chunk with ``finish_reason``, then ``data: [DONE]``. A turn with
``finish_reason=None`` ends the stream abruptly after its last argument chunk (no finish reason,
no ``[DONE]``), like a dropped connection.

Like OpenAI, the server refuses (HTTP 400) a conversation in which an assistant message with
``tool_calls`` is not followed by one tool message per call id — the check that makes a thread
with dangling tool calls unusable. Every request body is kept in :attr:`ScriptedOpenAI.requests`.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

__all__ = ["ScriptedOpenAI", "ToolCallScript", "Turn", "dangling_tool_calls"]

_ARG_CHUNK = 5


@dataclass(frozen=True)
class ToolCallScript:
    name: str
    #: The raw ``arguments`` text, sent as is (it may be cut or not JSON at all).
    arguments: str
    id: str = ""


@dataclass(frozen=True)
class Turn:
    content: str = ""
    tool_calls: Sequence[ToolCallScript] = ()
    finish_reason: str | None = "stop"
    #: Not 200: answer with this HTTP error instead (e.g. 429, 500).
    status: int = 200
    #: Seconds to wait before answering (a slow provider).
    delay: float = 0.0
    #: (prompt, completion) tokens of the final usage chunk, sent when the client asked for it
    #: (``stream_options.include_usage``).
    usage: tuple[int, int] = (11, 7)


def dangling_tool_calls(messages: Sequence[dict[str, Any]]) -> list[str]:
    """Ids of assistant tool calls not answered by the tool messages right after them."""
    missing: list[str] = []
    for i, message in enumerate(messages):
        if message.get("role") != "assistant" or not message.get("tool_calls"):
            continue
        wanted = {call["id"] for call in message["tool_calls"]}
        j = i + 1
        while j < len(messages) and messages[j].get("role") == "tool":
            wanted.discard(messages[j].get("tool_call_id"))
            j += 1
        missing.extend(sorted(wanted))
    return missing


@dataclass
class ScriptedOpenAI:
    turns: list[Turn] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    refused: list[list[str]] = field(default_factory=list)
    _server: uvicorn.Server | None = None
    _thread: threading.Thread | None = None
    base_url: str = ""

    def script(self, *turns: Turn) -> None:
        self.turns.extend(turns)

    # -- the app --------------------------------------------------------------------------------

    async def _completions(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        missing = dangling_tool_calls(body.get("messages", []))
        if missing:
            self.refused.append(missing)
            return JSONResponse(
                {
                    "error": {
                        "message": "An assistant message with 'tool_calls' must be followed by "
                        "tool messages responding to each 'tool_call_id'. The following "
                        f"tool_call_ids did not have response messages: {', '.join(missing)}",
                        "type": "invalid_request_error",
                        "param": "messages",
                        "code": None,
                    }
                },
                status_code=400,
            )
        turn = self.turns.pop(0) if self.turns else Turn(content="(the script has ended)")
        if turn.delay:
            await asyncio.sleep(turn.delay)
        if turn.status != 200:
            return JSONResponse(
                {"error": {"message": f"scripted {turn.status}", "type": "scripted_error"}},
                status_code=turn.status,
                headers={"retry-after-ms": "10"},
            )
        limit = body.get("max_completion_tokens", body.get("max_tokens"))
        if isinstance(limit, int) and len(turn.content.split()) > limit:
            # A provider cuts the answer at max_tokens (one word = one token here).
            turn = Turn(content=" ".join(turn.content.split()[:limit]), finish_reason="length")
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        return StreamingResponse(
            self._stream(turn, body.get("model", "scripted"), include_usage),
            media_type="text/event-stream",
        )

    async def _stream(self, turn: Turn, model: str, include_usage: bool) -> AsyncIterator[bytes]:
        created = int(time.time())
        n = len(self.requests)

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            payload = {
                "id": f"chatcmpl-{n}",
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            return f"data: {json.dumps(payload)}\n\n".encode()

        yield chunk({"role": "assistant", "content": ""})
        for start in range(0, len(turn.content), 8):
            yield chunk({"content": turn.content[start : start + 8]})
        for index, call in enumerate(turn.tool_calls):
            call_id = call.id or f"call_{n}_{index}"
            yield chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": ""},
                        }
                    ]
                }
            )
            for start in range(0, len(call.arguments), _ARG_CHUNK):
                piece = call.arguments[start : start + _ARG_CHUNK]
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                await asyncio.sleep(0)
        if turn.finish_reason is None:
            return  # the connection drops: no finish reason, no [DONE]
        yield chunk({}, turn.finish_reason)
        if include_usage:
            prompt, completion = turn.usage
            usage = {
                "id": f"chatcmpl-{n}",
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                },
            }
            yield f"data: {json.dumps(usage)}\n\n".encode()
        yield b"data: [DONE]\n\n"

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> str:
        app = Starlette(routes=[Route("/v1/chat/completions", self._completions, methods=["POST"])])
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="warning", lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the scripted OpenAI server did not start")
            time.sleep(0.02)
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self.base_url

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)


def running(*turns: Turn) -> Iterator[ScriptedOpenAI]:
    """Start a server with ``turns`` scripted; stop it afterwards (a fixture body)."""
    server = ScriptedOpenAI()
    server.script(*turns)
    server.start()
    try:
        yield server
    finally:
        server.stop()
