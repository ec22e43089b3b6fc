"""``GET /api/v1/threads/{id}`` carries each tool-calling message's tool calls (name, args,
status, result), so a client renders history without replaying any run's events."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.support.history import add_tool_call
from tests.support.server import LiveServer, create_user_with_token
from tests.support.sse import read_events
from yuxi.bootstrap import Container
from yuxi.limits import EVENT_TEXT_BYTES
from yuxi.repositories.thread_repository import ThreadRepository


async def _say(client: httpx.AsyncClient, thread: str, text: str) -> dict[str, Any]:
    resp = await client.post(f"/api/v1/threads/{thread}/runs?wait=true", json={"input": text})
    assert resp.status_code == 200, resp.text
    return dict(resp.json())


async def test_thread_view_has_tool_calls_and_stays_private(
    live_server: LiveServer, container: Container
) -> None:
    uid_a, token_a = await create_user_with_token(container, "alice")
    _, token_b = await create_user_with_token(container, "bob")
    async with live_server.client(token_a) as a, live_server.client(token_b) as b:
        assert (await a.put("/api/v1/me/config", json={"enable_memory": True})).status_code == 200
        created = await a.post("/api/v1/threads", json={})
        thread = str(created.json()["thread_id"])
        remembered = await _say(a, thread, "remember: I drink oolong tea")
        assert remembered["status"] == "completed", remembered
        missing = await _say(a, thread, "read file: notes/missing.md")
        assert missing["status"] == "completed", missing
        waiting = await _say(a, thread, "write file notes/a.md: hi")
        assert waiting["status"] == "interrupted", waiting

        resp = await a.get(f"/api/v1/threads/{thread}")
        assert resp.status_code == 200, resp.text
        messages = resp.json()["messages"]
        for m in messages:
            if m["message_type"] != "tool_call":
                assert m["tool_calls"] == [], m
        by_run = {
            m["run_id"]: m["tool_calls"] for m in messages if m["message_type"] == "tool_call"
        }

        # a completed run: exactly what its tool_start / tool_end events said
        events = await read_events(a, remembered["run_id"])
        start = next(e["data"] for e in events if e["type"] == "tool_start")
        end = next(e["data"] for e in events if e["type"] == "tool_end")
        assert by_run[remembered["run_id"]] == [
            {
                "tool_call_id": start["tool_call_id"],
                "name": "remember_memory",
                "args": start["args"],
                "status": "success",
                "result": end["result"],
                "truncated": False,
            }
        ]
        assert "I drink oolong tea" in json.dumps(start["args"])
        assert json.loads(end["result"])["status"] == "updated"

        # a tool that failed is an error, told by the server (no client-side guessing)
        [failed] = by_run[missing["run_id"]]
        assert failed["name"] == "read_workspace_file"
        assert failed["args"] == {"path": "notes/missing.md"}
        assert failed["status"] == "error" and failed["result"]

        # a call still waiting for approval has no result yet
        [pending] = by_run[waiting["run_id"]]
        assert pending["name"] == "write_workspace_file"
        assert pending["status"] == "pending" and pending["result"] is None

        # another user's thread stays a 404, with or without tool calls in it
        foreign = await b.get(f"/api/v1/threads/{thread}")
        assert foreign.status_code == 404, foreign.text

        # a long stored output is cut to EVENT_TEXT_BYTES (16 KiB) and says so
        async with container.session_factory() as s, s.begin():
            repo = ThreadRepository(s)
            conversation = await repo.get_owned(uid_a, thread)
            assert conversation is not None
            message = await repo.add_message(
                conversation, role="assistant", content="", message_type="tool_call"
            )
            await add_tool_call(
                s,
                message.id,
                tool_call_id="call-long",
                name="read_workspace_file",
                input={"path": "big.txt"},
                output="茶" * 6000,  # 18,000 bytes
                status="success",
            )
        last = (await a.get(f"/api/v1/threads/{thread}")).json()["messages"][-1]
        [long_call] = last["tool_calls"]
        assert long_call["truncated"] is True
        assert EVENT_TEXT_BYTES - 64 < len(long_call["result"].encode()) <= EVENT_TEXT_BYTES
        assert long_call["args"] == {"path": "big.txt"}
