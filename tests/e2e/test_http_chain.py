"""The decision record's last verification row, run for real: HTTP + PostgreSQL + workers.

"A user explicitly asks to remember → a new thread can use it; with the switch off nothing is
written and no tool is exposed."
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import httpx

from tests.support.server import LiveServer, create_user_with_token
from tests.support.sse import read_events
from yuxi.bootstrap import Container
from yuxi.workspace.filesystem import Workspace

MEMORY = "/api/v1/workspace/files/agents/MEMORY.md"


async def _thread(client: httpx.AsyncClient) -> str:
    resp = await client.post("/api/v1/threads", json={})
    assert resp.status_code == 201, resp.text
    return str(resp.json()["thread_id"])


async def _say(client: httpx.AsyncClient, thread: str, text: str) -> dict[str, Any]:
    resp = await client.post(f"/api/v1/threads/{thread}/runs?wait=true", json={"input": text})
    assert resp.status_code == 200, resp.text
    run = resp.json()
    assert run["status"] in ("completed", "interrupted"), run
    return dict(run)


def _tool_names(events: list[dict[str, Any]]) -> list[str]:
    return [e["data"]["name"] for e in events if e["type"] == "tool_start"]


def _memory_path(container: Container, uid: str) -> Path:
    return Workspace(container.workspace_root, uid).directory / "agents" / "MEMORY.md"


async def test_remember_recall_search_tenancy_switch_and_correct(
    live_server: LiveServer, container: Container
) -> None:
    uid_a, token_a = await create_user_with_token(container, "alice")
    _, token_b = await create_user_with_token(container, "bob")
    async with live_server.client(token_a) as a, live_server.client(token_b) as b:
        assert (await a.put("/api/v1/me/config", json={"enable_memory": True})).status_code == 200
        t1 = await _thread(a)
        run1 = await _say(a, t1, "remember: I drink oolong tea")
        events1 = await read_events(a, run1["run_id"])
        assert _tool_names(events1) == ["remember_memory"]
        end = next(e["data"] for e in events1 if e["type"] == "tool_end")
        assert end["status"] == "success" and json.loads(end["result"])["status"] == "updated"
        assert events1[-1]["type"] == "run_status" and events1[-1]["data"]["status"] == "completed"
        # replay from Last-Event-ID returns exactly the tail
        tail = await read_events(a, run1["run_id"], last_event_id=events1[1]["seq"])
        assert [e["seq"] for e in tail] == [e["seq"] for e in events1[2:]]

        t2 = await _thread(a)
        recall = await _say(a, t2, "what do you remember?")
        assert "I drink oolong tea" in recall["output"]["reply"]

        t3 = await _thread(a)
        found = await _say(a, t3, "search history: oolong")
        result = json.loads(
            next(
                e["data"]["result"]
                for e in await read_events(a, found["run_id"])
                if e["type"] == "tool_end"
            )
        )
        assert t1 in {item["thread_id"] for item in result["items"]}

        listed = (await a.get(f"/api/v1/threads/{t1}/runs")).json()["runs"]
        assert [r["run_id"] for r in listed] == [run1["run_id"]]

        # user B sees none of it
        assert (await b.get(f"/api/v1/threads/{t1}/runs")).status_code == 404
        assert (await b.get(f"/api/v1/threads/{t1}")).status_code == 404
        assert (await b.get(f"/api/v1/runs/{run1['run_id']}")).status_code == 404
        assert (await b.get(f"/api/v1/runs/{run1['run_id']}/events")).status_code == 404
        await b.put("/api/v1/me/config", json={"enable_memory": True})
        tb = await _thread(b)
        b_search = await _say(b, tb, "search history: oolong")
        b_result = next(
            e["data"]["result"]
            for e in await read_events(b, b_search["run_id"])
            if e["type"] == "tool_end"
        )
        assert "oolong" not in b_result.replace("search history: oolong", "")
        assert json.loads(b_result)["items"] == [] or all(
            item["thread_id"] == tb for item in json.loads(b_result)["items"]
        )
        b_recall = await _say(b, tb, "what do you remember?")
        assert "oolong" not in b_recall["output"]["reply"]

        # switch off: no memory tools, file bytes unchanged
        path = _memory_path(container, uid_a)
        before = hashlib.sha256(path.read_bytes()).hexdigest()
        await a.put("/api/v1/me/config", json={"enable_memory": False})
        t4 = await _thread(a)
        off = await _say(a, t4, "remember: poison")
        assert _tool_names(await read_events(a, off["run_id"])) == []
        assert hashlib.sha256(path.read_bytes()).hexdigest() == before
        assert off["memory_snapshot"] is None

        # re-enable, correct exactly that text
        await a.put("/api/v1/me/config", json={"enable_memory": True})
        fixed = await _say(a, t4, "correct memory: oolong => pu-erh")
        assert fixed["status"] == "completed"
        assert path.read_text() == "I drink pu-erh tea\n"


async def test_eight_threads_remember_concurrently(
    live_server: LiveServer, container: Container
) -> None:
    uid, token = await create_user_with_token(container, "carol")
    async with live_server.client(token) as c:
        await c.put("/api/v1/me/config", json={"enable_memory": True})
        threads = [await _thread(c) for _ in range(8)]
        runs = await asyncio.gather(
            *(_say(c, t, f"remember: fact-{n}") for n, t in enumerate(threads))
        )
        assert all(r["status"] == "completed" for r in runs)
    lines = [ln for ln in _memory_path(container, uid).read_text().splitlines() if ln.strip()]
    assert sorted(lines) == sorted(f"fact-{n}" for n in range(8))


async def test_agent_call_threads_never_come_back_and_approval_resume(
    live_server: LiveServer, container: Container
) -> None:
    _, token = await create_user_with_token(container, "dave")
    async with live_server.client(token) as c:
        await c.put("/api/v1/me/config", json={"enable_memory": True})
        call = await c.post("/api/v1/agent-calls?wait=true", json={"input": "AGENTCALLMARK-91 hi"})
        assert call.status_code == 200 and call.json()["status"] == "completed", call.text
        listed = (await c.get("/api/v1/threads")).json()["threads"]
        assert call.json()["thread_id"] not in {t["thread_id"] for t in listed}
        t = await _thread(c)
        searched = await _say(c, t, "search history: AGENTCALLMARK-91")
        result = json.loads(
            next(
                e["data"]["result"]
                for e in await read_events(c, searched["run_id"])
                if e["type"] == "tool_end"
            )
        )
        assert {i["thread_id"] for i in result["items"]} <= {t}

        t2 = await _thread(c)
        paused = await _say(c, t2, "write file notes/plan.md: 计划")
        assert paused["status"] == "interrupted"
        assert paused["output"]["interrupt"]["action_requests"][0]["name"] == "write_workspace_file"
        resumed = await c.post(
            f"/api/v1/runs/{paused['run_id']}/resume?wait=true", json={"decision": "approve"}
        )
        assert resumed.status_code == 200 and resumed.json()["status"] == "completed", resumed.text
        assert resumed.json()["thread_id"] == t2
        got = await c.get("/api/v1/workspace/files/notes/plan.md")
        assert got.status_code == 200 and got.text == "计划"


async def test_file_api_etags_and_auth(live_server: LiveServer, container: Container) -> None:
    _, token = await create_user_with_token(container, "erin")
    async with live_server.client(token) as c, live_server.client() as anon:
        assert (await anon.get("/api/v1/me")).status_code == 401
        bad = await anon.get("/api/v1/me", headers={"Authorization": "Bearer nope"})
        assert bad.status_code == 401 and bad.json()["error"]["code"] == "unauthorized"
        first = await c.get(MEMORY)
        etag = first.headers["etag"]
        ok = await c.put(MEMORY, content=b"mine\n", headers={"If-Match": etag})
        assert ok.status_code == 204
        stale = await c.put(MEMORY, content=b"stale\n", headers={"If-Match": etag})
        assert stale.status_code == 412 and stale.json()["error"]["code"] == "precondition_failed"
        assert (await c.get(MEMORY)).text == "mine\n"
        assert (await c.get("/api/v1/workspace/files/../etc/passwd")).status_code in (400, 404)
        unknown = await c.put("/api/v1/me/config", json={"enable_memory": True, "x": 1})
        assert unknown.status_code == 422
        nul = await c.get("/api/v1/threads/a%00b")
        assert nul.status_code == 400 and nul.json()["error"]["code"] == "invalid_argument"
        assert (await c.post("/api/v1/threads", json={"title": "a\u0000b"})).status_code == 422
