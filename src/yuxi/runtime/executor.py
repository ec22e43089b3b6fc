"""Execute one claimed run: build the agent for it, stream it, record everything, finish it.

The run's identity (uid, thread, run, request, worker) comes from the claim — the database row
this worker holds a lease on — and reaches tools only through the LangGraph run context.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig
from langgraph.types import Command
from sqlalchemy import func, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from yuxi.agents.context import RunIdentity, build_agent_input_context
from yuxi.agents.graphs.chatbot import build_chatbot_graph
from yuxi.agents.graphs.subagent import build_subagent_graph
from yuxi.agents.tools.delegate import SubagentReply, make_delegate_tool
from yuxi.db.models import AgentRun
from yuxi.errors import SubagentFailed
from yuxi.repositories.agent_run_repository import AgentRunRepository
from yuxi.repositories.conversation_repository import ConversationRepository
from yuxi.runtime.persistence import LeaseLost, RunRecorder
from yuxi.services.lookback_service import LookbackService
from yuxi.services.memory_service import MemoryService, MemorySnapshot
from yuxi.workspace.filesystem import Workspace

_log = logging.getLogger(__name__)

CHAT_SYSTEM_PROMPT = (
    "You are Yuxi, a helpful assistant. Be concise. Use tools only when they help the user."
)
SUBAGENT_SYSTEM_PROMPT = (
    "You are a Yuxi SubAgent. Complete the delegated task and reply with the result."
)
TOKEN_FLUSH_CHARS = 200


@dataclass
class RunDeps:
    sessions: async_sessionmaker[AsyncSession]
    memory: MemoryService
    lookback: LookbackService
    model: BaseChatModel
    checkpointer: Any
    workspace_for: Any  # Callable[[str], Workspace]


@dataclass
class _StreamState:
    seen_message_ids: set[str] = field(default_factory=set)
    final_reply: str = ""
    interrupt: Any = None
    token_buffer: list[str] = field(default_factory=list)


def _text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "".join(parts)


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return json.loads(json.dumps(value, default=str))


class RunExecutor:
    def __init__(self, deps: RunDeps) -> None:
        self.deps = deps

    async def execute(self, run: AgentRun, recorder: RunRecorder) -> None:
        """Drive the run to a terminal status. Raises LeaseLost if ownership went away."""
        assert run.worker_id is not None
        ctx = RunIdentity(
            uid=run.uid,
            thread_id=run.conversation_thread_id,
            run_id=run.id,
            request_id=run.request_id,
            worker_id=run.worker_id,
        )
        workspace: Workspace = self.deps.workspace_for(run.uid)
        await recorder.event("run_status", {"status": "running", "attempt": run.attempt})
        try:
            await workspace.ensure_user_workspace()
            agent_input = await build_agent_input_context(
                workspace=workspace, identity=ctx, base_prompt=CHAT_SYSTEM_PROMPT
            )

            async def on_snapshot(snapshot: MemorySnapshot) -> None:
                await recorder.record_snapshot(snapshot.sha256, snapshot.size)

            graph = await build_chatbot_graph(
                model=self.deps.model,
                memory=self.deps.memory,
                lookback=self.deps.lookback,
                workspace=workspace,
                context=ctx,
                system_prompt=agent_input.system_prompt,
                delegate_tool=make_delegate_tool(self._subagent_runner(run, workspace)),
                checkpointer=self.deps.checkpointer,
                on_snapshot=on_snapshot,
            )
            graph_input: Any = await self._graph_input(run)
            state = _StreamState()
            await self._preload_seen(graph, run, state)
            config: RunnableConfig = {"configurable": {"thread_id": run.conversation_thread_id}}
            async for mode, chunk in graph.astream(
                graph_input, config, context=ctx, stream_mode=["updates", "messages"]
            ):
                if mode == "messages":
                    await self._on_token(chunk, recorder, state)
                else:
                    await self._flush_tokens(recorder, state)
                    await self._on_update(chunk, recorder, state)
            await self._flush_tokens(recorder, state)
        except (LeaseLost, asyncio.CancelledError):
            raise
        except Exception as exc:
            _log.exception("run %s failed", run.id)
            await recorder.finish(
                "failed", error_code="run_error", error_message=f"{type(exc).__name__}: {exc}"
            )
            return
        if state.interrupt is not None:
            await recorder.finish("interrupted", output={"interrupt": state.interrupt})
        else:
            await recorder.finish("completed", output={"reply": state.final_reply})

    async def _graph_input(self, run: AgentRun) -> Any:
        if run.run_type == "resume":
            decision = run.input_payload.get("decision")
            interrupted = await self._interrupted_requests(run)
            count = max(1, len(interrupted))
            if decision == "approve":
                decisions = [{"type": "approve"} for _ in range(count)]
            else:
                decisions = [
                    {"type": "reject", "message": "The user rejected this action."}
                    for _ in range(count)
                ]
            return Command(resume={"decisions": decisions})
        return {"messages": [HumanMessage(content=str(run.input_payload.get("input", "")))]}

    async def _interrupted_requests(self, run: AgentRun) -> list[Any]:
        if run.created_by_run_id is None:
            return []
        async with self.deps.sessions() as session:
            parent = await AgentRunRepository(session).get(run.created_by_run_id)
        if parent is None or not parent.output:
            return []
        interrupt = parent.output.get("interrupt") or {}
        requests = interrupt.get("action_requests") if isinstance(interrupt, dict) else None
        return list(requests or [])

    async def _preload_seen(self, graph: Any, run: AgentRun, state: _StreamState) -> None:
        """Messages already in the thread's checkpoint were recorded by earlier runs."""
        snapshot = await graph.aget_state(
            {"configurable": {"thread_id": run.conversation_thread_id}}
        )
        for message in (snapshot.values or {}).get("messages", []) if snapshot else []:
            if getattr(message, "id", None):
                state.seen_message_ids.add(message.id)

    async def _on_token(self, chunk: Any, recorder: RunRecorder, state: _StreamState) -> None:
        message, metadata = chunk
        if not isinstance(message, AIMessageChunk | AIMessage):
            return
        if isinstance(metadata, dict) and metadata.get("lc_agent_name") not in (None, "chatbot"):
            return
        text = _text(message)
        if text:
            state.token_buffer.append(text)
            if sum(len(t) for t in state.token_buffer) >= TOKEN_FLUSH_CHARS:
                await self._flush_tokens(recorder, state)

    async def _flush_tokens(self, recorder: RunRecorder, state: _StreamState) -> None:
        if state.token_buffer:
            text = "".join(state.token_buffer)
            state.token_buffer.clear()
            await recorder.event("token", {"text": text})

    async def _on_update(self, chunk: Any, recorder: RunRecorder, state: _StreamState) -> None:
        if not isinstance(chunk, dict):
            return
        for node, update_ in chunk.items():
            if node == "__interrupt__":
                values = [getattr(i, "value", i) for i in update_]
                value = _jsonable(values[0] if len(values) == 1 else {"interrupts": values})
                state.interrupt = value
                await recorder.event("interrupt", {"request": value})
                continue
            if not isinstance(update_, dict):
                continue
            for message in update_.get("messages", []) or []:
                await self._on_message(message, recorder, state)

    async def _on_message(self, message: Any, recorder: RunRecorder, state: _StreamState) -> None:
        if not isinstance(message, BaseMessage):
            return
        if message.id and message.id in state.seen_message_ids:
            return
        if message.id:
            state.seen_message_ids.add(message.id)
        if isinstance(message, AIMessage):
            if message.tool_calls:
                calls = [
                    {"id": c.get("id"), "name": c.get("name"), "args": _jsonable(c.get("args"))}
                    for c in message.tool_calls
                ]
                await recorder.assistant_tool_calls(_text(message), calls)
            else:
                state.final_reply = _text(message)
                await recorder.assistant_reply(state.final_reply)
        elif isinstance(message, ToolMessage):
            status = "error" if getattr(message, "status", "success") == "error" else "success"
            text = _text(message)
            if status == "success" and text.startswith("{"):
                try:
                    if json.loads(text).get("status") == "error":
                        status = "error"
                except (ValueError, AttributeError):
                    pass
            await recorder.tool_result(
                str(message.tool_call_id), str(message.name or ""), text, status
            )

    # -- SubAgent delegation ------------------------------------------------------------------

    def _subagent_runner(self, parent: AgentRun, workspace: Workspace) -> Any:
        async def run_subagent(task: str, runtime: Any) -> SubagentReply:
            return await self._run_subagent(parent, workspace, task)

        return run_subagent

    async def _run_subagent(
        self, parent: AgentRun, workspace: Workspace, task: str
    ) -> SubagentReply:
        """Run the SubAgent graph in a persisted child thread with its own ``subagent`` run.

        The SubAgent never gets the memory middleware, and its context carries no worker_id,
        so even a forged call could not pass the memory write gate.
        """
        async with self.deps.sessions() as session, session.begin():
            conversations = ConversationRepository(session)
            parent_thread = await conversations.get_owned(parent.uid, parent.conversation_thread_id)
            if parent_thread is None:
                raise LeaseLost("parent thread is gone")
            child = await conversations.create_conversation(
                parent.uid, title=f"SubAgent: {task[:60]}"
            )
            await conversations.link_subagent_thread(parent_thread, child, parent.id)
            sub_run, _ = await AgentRunRepository(session).create_run(
                uid=parent.uid,
                thread_id=child.thread_id,
                request_id=f"subagent:{parent.id}:{uuid.uuid4().hex}",
                run_type="subagent",
                status="running",
                input_payload={"task": task},
                created_by_run_id=parent.id,
            )
            await conversations.add_message(child, role="user", content=task, run_id=sub_run.id)
        ctx = RunIdentity(
            uid=parent.uid,
            thread_id=child.thread_id,
            run_id=sub_run.id,
            request_id=sub_run.request_id,
            worker_id=None,
        )
        agent_input = await build_agent_input_context(
            workspace=workspace, identity=ctx, base_prompt=SUBAGENT_SYSTEM_PROMPT
        )
        graph = build_subagent_graph(
            model=self.deps.model, workspace=workspace, system_prompt=agent_input.system_prompt
        )
        status, reply = "completed", ""
        try:
            result = await graph.ainvoke({"messages": [HumanMessage(content=task)]}, context=ctx)
            messages = result.get("messages", [])
            reply = _text(messages[-1]) if messages else ""
        except Exception as exc:  # the parent run goes on; the child records the failure
            status, reply = "failed", f"SubAgent failed: {type(exc).__name__}: {exc}"
        async with self.deps.sessions() as session, session.begin():
            child_row = await ConversationRepository(session).get_owned(parent.uid, child.thread_id)
            if child_row is not None:
                await ConversationRepository(session).add_message(
                    child_row, role="assistant", content=reply, run_id=sub_run.id
                )
            await session.execute(
                update(AgentRun)
                .where(AgentRun.id == sub_run.id, AgentRun.status == "running")
                .values(status=status, finished_at=func.now(), output={"reply": reply})
            )
        if status != "completed":
            raise SubagentFailed(f"{reply} (child thread {child.thread_id})")
        return SubagentReply(reply=reply, thread_id=child.thread_id)


__all__ = ["RunDeps", "RunExecutor"]
