"""Secret-shaped memory writes, live over HTTP: ``yuxi serve`` with its workers, PostgreSQL and
the offline model (design.md §5.9).

The user's own ``remember:`` of an API key — no untrusted input in the run — pauses on an
approval whose description names the kind of secret (never the key); a rejection writes nothing
(MEMORY.md's hash compared) and the model is told with ``memory_write_rejected``; an approval
writes exactly once. An ordinary line is still one step.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import httpx

from tests.support.server import LiveServer, create_user_with_token
from tests.support.sse import read_events
from yuxi.bootstrap import Container
from yuxi.workspace.filesystem import Workspace

KEY = "sk-proj-4fGh2KLmN8pQrS7tUvWx9yZaHTTP0001"
DSN = "postgres://admin:S3cret2024@db.internal/prod"


async def _say(client: httpx.AsyncClient, thread: str, text: str) -> dict[str, Any]:
    resp = await client.post(f"/api/v1/threads/{thread}/runs?wait=true", json={"input": text})
    assert resp.status_code == 200, resp.text
    return dict(resp.json())


async def _decide(client: httpx.AsyncClient, run_id: str, decision: str) -> dict[str, Any]:
    resp = await client.post(f"/api/v1/runs/{run_id}/resume?wait=true", json={"decision": decision})
    assert resp.status_code == 200, resp.text
    return dict(resp.json())


def _memory_sha(container: Container, uid: str) -> str:
    path: Path = Workspace(container.workspace_root, uid).directory / "agents" / "MEMORY.md"
    return hashlib.sha256(path.read_bytes() if path.exists() else b"").hexdigest()


def _memory_text(container: Container, uid: str) -> str:
    path = Workspace(container.workspace_root, uid).directory / "agents" / "MEMORY.md"
    return path.read_text() if path.exists() else ""


def _tool_ends(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        e["data"]
        for e in events
        if e["type"] == "tool_end" and e["data"].get("name") == "remember_memory"
    ]


async def test_a_secret_waits_reject_writes_nothing_approve_writes_once(
    live_server: LiveServer, container: Container
) -> None:
    uid, token = await create_user_with_token(container, "secretive")
    async with live_server.client(token) as c:
        assert (await c.put("/api/v1/me/config", json={"enable_memory": True})).status_code == 200
        thread = (await c.post("/api/v1/threads", json={})).json()["thread_id"]
        await _say(c, thread, "remember: I drink oolong tea")
        before = _memory_sha(container, uid)

        # -- the user's own request, held because it looks like a secret ----------------------
        paused = await _say(c, thread, f"remember: 我的 API key 是 {KEY}")
        assert paused["status"] == "interrupted", paused
        (action,) = paused["output"]["interrupt"]["action_requests"]
        assert action["name"] == "remember_memory"
        assert action["args"] == {"content": f"我的 API key 是 {KEY}"}
        assert "looks like a secret: an API key" in action["description"]
        assert KEY not in action["description"]
        assert _memory_sha(container, uid) == before

        # -- reject: nothing written, the model told in the structured shape -------------------
        rejected = await _decide(c, paused["run_id"], "reject")
        assert rejected["status"] == "completed", rejected
        assert _memory_sha(container, uid) == before
        assert KEY not in _memory_text(container, uid)
        (told,) = _tool_ends(await read_events(c, rejected["run_id"]))
        assert told["status"] == "error"
        payload = json.loads(told["result"])
        assert (payload["code"], payload["reasons"]) == ("memory_write_rejected", ["secret_like"])
        assert KEY not in told["result"]
        memory = (await c.get("/api/v1/memory")).json()
        assert all(KEY not in entry["text"] for entry in memory["entries"])

        # -- a connection URL with a password, approved: written exactly once -----------------
        paused = await _say(c, thread, f"remember: prod db is {DSN}")
        assert paused["status"] == "interrupted", paused
        (action,) = paused["output"]["interrupt"]["action_requests"]
        assert "looks like a secret: a connection URL with a password" in action["description"]
        assert "S3cret2024" not in action["description"]
        assert _memory_sha(container, uid) == before
        approved = await _decide(c, paused["run_id"], "approve")
        assert approved["status"] == "completed", approved
        (written,) = _tool_ends(await read_events(c, approved["run_id"]))
        assert written["status"] == "success"
        assert _memory_text(container, uid).count(DSN) == 1
        # the lint flags it for the owner, by kind, without quoting it
        lint = (await c.get("/api/v1/memory")).json()["lint"]
        (finding,) = [f for f in lint if f["code"] == "secret_like"]
        assert "a connection URL with a password" in finding["message"]
        assert "S3cret2024" not in finding["message"]

        # -- an ordinary line near the rule: one step ----------------------------------------
        plain = await _say(c, thread, "remember: My password manager is 1Password")
        assert plain["status"] == "completed", plain
        assert "1Password" in _memory_text(container, uid)
