"""A small, strict SSE reader over httpx (the real wire format, not a stub)."""

from __future__ import annotations

import json
from typing import Any

import httpx


async def read_events(
    client: httpx.AsyncClient, run_id: str, *, last_event_id: int | None = None
) -> list[dict[str, Any]]:
    headers = {"Accept": "text/event-stream"}
    if last_event_id is not None:
        headers["Last-Event-ID"] = str(last_event_id)
    events: list[dict[str, Any]] = []
    frame: dict[str, str] = {}
    async with client.stream("GET", f"/api/v1/runs/{run_id}/events", headers=headers) as resp:
        assert resp.status_code == 200, await resp.aread()
        assert resp.headers["content-type"].startswith("text/event-stream")
        async for line in resp.aiter_lines():
            line = line.rstrip("\r")
            if not line:
                if "data" in frame:
                    payload = json.loads(frame["data"])
                    assert str(payload["seq"]) == frame.get("id")
                    assert payload["type"] == frame.get("event")
                    events.append(payload)
                frame = {}
                continue
            if line.startswith(":"):
                continue
            key, _, value = line.partition(":")
            frame[key] = value[1:] if value.startswith(" ") else value
    return events
