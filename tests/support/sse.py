"""A small, strict SSE reader over httpx (the real wire format, not a stub)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx


async def iter_events(resp: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """The events of an open ``text/event-stream`` response, checking each frame's ``id`` and
    ``event`` against its payload; comments (keep-alives) are skipped."""
    frame: dict[str, str] = {}
    async for line in resp.aiter_lines():
        line = line.rstrip("\r")
        if not line:
            if "data" in frame:
                payload = json.loads(frame["data"])
                assert str(payload["seq"]) == frame.get("id")
                assert payload["type"] == frame.get("event")
                yield payload
            frame = {}
            continue
        if line.startswith(":"):
            continue
        key, _, value = line.partition(":")
        frame[key] = value[1:] if value.startswith(" ") else value


async def read_events(
    client: httpx.AsyncClient, run_id: str, *, last_event_id: int | None = None
) -> list[dict[str, Any]]:
    headers = {"Accept": "text/event-stream"}
    if last_event_id is not None:
        headers["Last-Event-ID"] = str(last_event_id)
    async with client.stream("GET", f"/api/v1/runs/{run_id}/events", headers=headers) as resp:
        assert resp.status_code == 200, await resp.aread()
        assert resp.headers["content-type"].startswith("text/event-stream")
        return [event async for event in iter_events(resp)]
