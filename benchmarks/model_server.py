"""A stand-in for a slow OpenAI-compatible model: ``python -m benchmarks.model_server --port P``.

Stateless, so any number of users can share it: every ``POST /v1/chat/completions`` waits
``--delay`` seconds, then answers from the conversation it was sent —

* the last message is the user's: a ``remember_memory`` tool call whose ``content`` is that
  message's text (each turn of a benchmark user is a unique marker, so the memory file shows
  afterwards whether every run's write landed);
* otherwise (the tool's result came back): a short final reply.

Two model calls per run, one of them a memory write. It streams like OpenAI (role chunk, content
chunks, tool-call chunks, finish reason, the usage chunk when asked, ``[DONE]``); a request with
``"stream": false`` gets one JSON completion. ``GET /healthz`` answers once it listens, and
``GET /stats`` counts the calls it served and the most it had open at once.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

REPLY = "Saved to memory."
TOOL = "remember_memory"


def answer(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The assistant message for this conversation (content and tool calls)."""
    last = messages[-1] if messages else {}
    if last.get("role") == "user":
        text = last.get("content")
        if isinstance(text, list):  # content parts
            text = " ".join(str(p.get("text", "")) for p in text if isinstance(p, dict))
        args = json.dumps({"content": str(text or "")}, ensure_ascii=False)
        return {"content": "", "tool_calls": [{"name": TOOL, "arguments": args}]}
    return {"content": REPLY, "tool_calls": []}


class ModelApp:
    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.calls = 0
        self.open = 0
        self.most_open = 0

    async def completions(self, request: Request) -> Response:
        body = await request.json()
        self.calls += 1
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        n = self.calls
        try:
            await asyncio.sleep(self.delay)
        finally:
            self.open -= 1
        reply = answer(body.get("messages", []))
        model = body.get("model", "scripted")
        if not body.get("stream"):
            return JSONResponse(_completion(n, model, reply))
        usage = bool((body.get("stream_options") or {}).get("include_usage"))
        return StreamingResponse(_stream(n, model, reply, usage), media_type="text/event-stream")

    async def stats(self, request: Request) -> Response:
        return JSONResponse({"calls": self.calls, "open": self.open, "most_open": self.most_open})


def _completion(n: int, model: str, answer: dict[str, Any]) -> dict[str, Any]:
    calls = [
        {
            "id": f"call_{n}_{i}",
            "type": "function",
            "function": {"name": c["name"], "arguments": c["arguments"]},
        }
        for i, c in enumerate(answer["tool_calls"])
    ]
    message: dict[str, Any] = {"role": "assistant", "content": answer["content"] or None}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
    }


async def _stream(
    n: int, model: str, answer: dict[str, Any], include_usage: bool
) -> AsyncIterator[bytes]:
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        payload = {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if delta else [],
            **extra,
        }
        if finish and not delta:
            payload["choices"] = [{"index": 0, "delta": {}, "finish_reason": finish}]
        return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n".encode()

    yield chunk({"role": "assistant", "content": ""})
    text = answer["content"]
    for start in range(0, len(text), 8):
        yield chunk({"content": text[start : start + 8]})
    for i, call in enumerate(answer["tool_calls"]):
        head = {"index": i, "id": f"call_{n}_{i}", "type": "function"}
        fn = {"name": call["name"], "arguments": ""}
        yield chunk({"tool_calls": [{**head, "function": fn}]})
        yield chunk({"tool_calls": [{"index": i, "function": {"arguments": call["arguments"]}}]})
    yield chunk({}, "tool_calls" if answer["tool_calls"] else "stop")
    if include_usage:
        usage = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
        yield chunk({}, None, usage=usage)
    yield b"data: [DONE]\n\n"


def build_app(delay: float) -> Starlette:
    model = ModelApp(delay)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    return Starlette(
        routes=[
            Route("/v1/chat/completions", model.completions, methods=["POST"]),
            Route("/healthz", healthz),
            Route("/stats", model.stats),
        ]
    )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.model_server", description=__doc__)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--delay", type=float, default=0.5, help="seconds before each answer")
    args = p.parse_args(argv)
    uvicorn.run(
        build_app(args.delay),
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        access_log=False,
        backlog=4096,
    )


if __name__ == "__main__":
    main()
