"""B5 — bytes put into the model's input per run vs. the number of past messages.

For users with 100 / 1,000 / 10,000 generated past messages (``datagen``), the first model call
of a new run in a **new thread** is assembled from the real parts and measured as UTF-8 bytes of
OpenAI-style JSON (``messages`` + ``tools``):

* ``ours`` — system prompt (``build_agent_input_context``: base prompt + AGENTS.md + USER.md)
  with the memory block (``render_memory_block`` of a realistic 20 KiB MEMORY.md) appended, the
  current user message, and the tool schemas (workspace tools + the three memory tools);
  ``ours_empty_memory`` is the same with no saved memory yet. History is *not* in the prompt;
  when the model looks back it calls the tools, whose bounded responses are measured too
  (one ``search_thread_messages`` for a common word + one ``read_thread_messages`` anchored on
  the newest hit) → ``ours_with_lookback``;
* ``preload_all`` — what the old runtime did: the same system prompt without memory, every
  past visible user/assistant message of the user, the current message, the workspace tools.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import psycopg
from langchain_core.utils.function_calling import convert_to_openai_tool

from benchmarks.datagen import TERMS, generate
from benchmarks.env import BenchEnv
from benchmarks.fixtures import make_claimed_run, realistic_memory
from yuxi.agents.context import RunIdentity, build_agent_input_context
from yuxi.agents.middlewares.memory import (
    create_memory_middleware,
    render_memory_block,
    run_memory,
)
from yuxi.agents.prompts import CHAT_SYSTEM_PROMPT
from yuxi.agents.tools.tool_result import tool_outcome
from yuxi.agents.tools.workspace_tools import make_workspace_tools
from yuxi.utils.json_utils import compact_json
from yuxi.workspace.filesystem import MEMORY_PATH, Workspace

SIZES = (100, 1_000, 10_000)
MEMORY_BYTES = 20 * 1024
CURRENT_MESSAGE = (
    "上次我们讨论 deploy 计划时定了什么? What did we decide about the deploy schedule?"
)

_VISIBLE_HISTORY_SQL = """
SELECT m.role, m.content FROM messages m JOIN conversations c ON c.id = m.conversation_id
WHERE m.uid = %(uid)s AND c.uid = %(uid)s AND c.status = 'active'
  AND c.source NOT IN ('agent_call', 'agent_evaluation')
  AND NOT EXISTS (SELECT 1 FROM subagent_threads s WHERE s.child_conversation_id = c.id)
  AND m.role IN ('user', 'assistant') AND m.message_type = 'text'
ORDER BY m.id
"""


def _utf8(obj: Any) -> int:
    return len(json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def _tools_json(tools: list[Any]) -> list[dict[str, Any]]:
    return [convert_to_openai_tool(tool) for tool in tools]


def _history(url: str, uid: str) -> list[dict[str, str]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(_VISIBLE_HISTORY_SQL, {"uid": uid}).fetchall()
    return [{"role": role, "content": content} for role, content in rows]


async def _one_size(env: BenchEnv, n: int, memory_text: bytes, seed: int) -> dict[str, Any]:
    c = env.container
    memory = c.services.memory
    lookback = c.services.lookback

    def load() -> str:
        with psycopg.connect(env.database_url) as conn:
            return generate(
                conn, users=1, messages=n, heavy_user_messages=n, seed=seed, uid_prefix=f"b5n{n}"
            ).heavy_uid

    uid = await asyncio.to_thread(load)
    workspace: Workspace = c.workspace(uid)
    await workspace.ensure_user_workspace()
    await workspace.replace_file(MEMORY_PATH, memory_text)
    ident = await make_claimed_run(c, uid)
    ctx = RunIdentity(ident.uid, ident.thread_id, ident.run_id, ident.request_id, ident.worker_id)
    agent_input = await build_agent_input_context(
        workspace=workspace, identity=ctx, base_prompt=CHAT_SYSTEM_PROMPT
    )
    snapshot = await memory.load_memory_snapshot(uid)
    assert snapshot is not None
    injected = run_memory(snapshot)
    middleware = create_memory_middleware(memory=memory, lookback=lookback)
    system_ours = f"{agent_input.system_prompt}\n\n{injected.block}"
    workspace_tools = _tools_json(make_workspace_tools(memory=memory, files=c.services.files))
    memory_tools = _tools_json(list(middleware.tools))
    current = {"role": "user", "content": CURRENT_MESSAGE}

    ours_messages = [{"role": "system", "content": system_ours}, current]
    ours = _utf8(ours_messages) + _utf8(workspace_tools + memory_tools)
    system_no_memory = (
        f"{agent_input.system_prompt}\n\n{render_memory_block('', nonce=injected.nonce)}"
    )
    ours_no_memory = _utf8([{"role": "system", "content": system_no_memory}, current]) + _utf8(
        workspace_tools + memory_tools
    )

    search, _ = await tool_outcome(
        lambda: lookback.search_thread_messages(uid=uid, query=TERMS["common_en"], limit=5)
    )
    items = search.get("items", [])
    read: dict[str, Any] = {}
    if items:
        read, _ = await tool_outcome(
            lambda: lookback.read_thread_messages(
                uid=uid, thread_id=items[0]["thread_id"], message_id=items[0]["message_id"]
            )
        )
    search_bytes = len(compact_json(search).encode("utf-8"))
    read_bytes = len(compact_json(read).encode("utf-8")) if read else 0

    history = await asyncio.to_thread(_history, env.database_url, uid)
    preload_messages = [
        {"role": "system", "content": agent_input.system_prompt},
        *history,
        current,
    ]
    preload = _utf8(preload_messages) + _utf8(workspace_tools)
    return {
        "past_messages": n,
        "visible_past_messages": len(history),
        "bytes": {
            "ours": ours,
            "ours_empty_memory": ours_no_memory,
            "ours_with_lookback": ours + search_bytes + read_bytes,
            "preload_all": preload,
        },
        "parts": {
            "system_prompt": len(agent_input.system_prompt.encode("utf-8")),
            "memory_block": len(injected.block.encode("utf-8")),
            "current_message": _utf8(current),
            "workspace_tool_schemas": _utf8(workspace_tools),
            "memory_tool_schemas": _utf8(memory_tools),
            "search_response": search_bytes,
            "search_items": len(items),
            "read_response": read_bytes,
            "read_messages": len(read.get("messages", [])) if read else 0,
            "history_in_prompt": _utf8(history),
        },
        "ratios": {
            "preload_all/ours": preload / ours,
            "preload_all/ours_with_lookback": preload / (ours + search_bytes + read_bytes),
        },
    }


async def run_b5(env: BenchEnv, *, sizes: tuple[int, ...] = SIZES, seed: int = 5) -> dict[str, Any]:
    memory_text = realistic_memory(MEMORY_BYTES, seed=3).encode("utf-8")
    rows = [await _one_size(env, n, memory_text, seed + i) for i, n in enumerate(sizes)]
    return {
        "memory_file_bytes": len(memory_text),
        "current_thread": "new thread: only the current user message",
        "sizes": rows,
    }
