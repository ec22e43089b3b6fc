"""Execute one claimed run: assemble its graph, stream it, record every event, finish it.

The run's identity comes from the claim (the row this worker holds a lease on) as one
:class:`~yuxi.identity.RunIdentity`; it reaches tools only as the LangGraph run ``context``.
Every record goes through the run service, fenced by the lease: :class:`LeaseLost` ends the run
here without finishing it (it is no longer this worker's to finish).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import Durability

from yuxi.agents.middlewares.tool_call_integrity import closing_messages
from yuxi.limits import RUN_MAX_STEPS
from yuxi.observability.logs import bind_run
from yuxi.runtime.graph_assembly import assemble_chatbot_graph, build_graph_input
from yuxi.runtime.run_failures import classify_failure
from yuxi.runtime.stream_events import (
    AssistantReplied,
    InterruptRequested,
    RunUsage,
    StreamEvent,
    StreamTranslator,
    TokenText,
    ToolCallsProposed,
    ToolFinished,
)
from yuxi.services.runs.service import ClaimedRun, LeaseLost
from yuxi.workspace.filesystem import Workspace

if TYPE_CHECKING:
    from yuxi.runtime.agent_runtime import AgentRuntime
    from yuxi.services.service_set import Services

__all__ = ["CHECKPOINT_DURABILITY", "RunExecutor"]

#: A run's LangGraph checkpoint is saved once, when the graph exits: completed, failed,
#: cancelled or interrupted for approval (LangGraph saves it on every exit path). Saving after
#: every step instead ("async") writes a checkpoint, its writes and its blobs for each of a
#: run's dozen middleware and model/tool steps: most of a run's statements and serialisation,
#: for one thing only: a worker that dies mid-run would leave its partial state in the
#: checkpoint. Such a run fails by lease reconciliation anyway; with "exit" the thread simply
#: continues from the end of the run before it (its records still show what the dead run did,
#: and its open tool calls are closed as any failed run's are).
CHECKPOINT_DURABILITY: Durability = "exit"

_log = logging.getLogger(__name__)


@dataclass
class _Outcome:
    reply: str = ""
    interrupt: Any = None
    usage: RunUsage = field(default_factory=RunUsage)
    started: float = field(default_factory=time.perf_counter)
    tokens: int = 0


class RunExecutor:
    def __init__(
        self,
        services: Services,
        runtime: AgentRuntime,
        workspace_for: Callable[[str], Workspace],
    ) -> None:
        self._services = services
        self._runtime = runtime
        self._workspace_for = workspace_for

    async def execute(self, claimed: ClaimedRun) -> None:
        """Drive the run to a terminal status. Raises LeaseLost if ownership went away.

        Runs in a task of its own (the worker's): every log line from here on carries the run's
        ids, and its wall time is observed by the status it ended with (``cancelled`` when the
        task was cancelled; nothing when the lease was lost or recording failed)."""
        identity = claimed.identity
        bind_run(identity.run_id, identity.thread_id)
        _log.info("run %s started (attempt %d)", identity.run_id, claimed.attempt)
        outcome, status = _Outcome(), ""
        try:
            status = await self._execute(claimed, outcome)
        except asyncio.CancelledError:
            status = "cancelled"
            raise
        finally:
            if status:
                took = time.perf_counter() - outcome.started
                self._runtime.metrics.run_finished(status, took)
                _log.info("run %s %s after %.3f s", identity.run_id, status, took)

    async def _execute(self, claimed: ClaimedRun, outcome: _Outcome) -> str:
        identity = claimed.identity
        runs = self._services.runs
        await runs.record_event(
            identity, "run_status", {"status": "running", "attempt": claimed.attempt}
        )
        try:
            graph = await assemble_chatbot_graph(
                claimed,
                services=self._services,
                runtime=self._runtime,
                workspace=self._workspace_for(identity.uid),
            )
            graph_input = await build_graph_input(claimed, runs)
            config: RunnableConfig = {
                "configurable": {"thread_id": identity.thread_id},
                "recursion_limit": RUN_MAX_STEPS,
            }
            # Messages already in the thread's checkpoint were recorded by earlier runs.
            checkpoint = await graph.aget_state(config)
            earlier = (checkpoint.values or {}).get("messages", []) if checkpoint else []
            if claimed.run_type == "chat":
                graph_input = await self._close_open_calls(claimed, earlier, graph_input)
            translator = StreamTranslator(m.id for m in earlier if getattr(m, "id", None))
            outcome.usage = translator.usage
            async for mode, chunk in graph.astream(
                graph_input,
                config,
                context=identity,
                stream_mode=["updates", "messages"],
                durability=CHECKPOINT_DURABILITY,
            ):
                for event in translator.feed(mode, chunk):
                    await self._record(claimed, event, outcome)
            for event in translator.flush():
                await self._record(claimed, event, outcome)
        except (LeaseLost, asyncio.CancelledError):
            raise
        except Exception as exc:
            failure = classify_failure(exc)
            if failure.expected:
                _log.warning("run %s failed: %s (%r)", identity.run_id, failure.code, exc)
            else:
                _log.exception("run %s failed", identity.run_id)
            await runs.finish(
                identity,
                "failed",
                error_code=failure.code,
                error_message=failure.message,
                output={"usage": outcome.usage.to_payload()},
            )
            return "failed"
        if outcome.interrupt is not None:
            await runs.finish(
                identity,
                "interrupted",
                output={"interrupt": outcome.interrupt, "usage": outcome.usage.to_payload()},
            )
            return "interrupted"
        await runs.finish(
            identity,
            "completed",
            output={"reply": outcome.reply, "usage": outcome.usage.to_payload()},
        )
        return "completed"

    async def _close_open_calls(
        self, claimed: ClaimedRun, earlier: list[Any], graph_input: Any
    ) -> Any:
        """Answer the tool calls an earlier run left open (it was cancelled, failed or lost its
        lease between a call and its result), in the checkpoint and in the thread's records, so
        the conversation is valid input again; then the new user message."""
        why = await self._services.runs.close_open_tool_calls(claimed.identity)
        closures = closing_messages(earlier, why or "Not completed: its run ended first.")
        if not closures:
            return graph_input
        return {"messages": [*closures, *graph_input["messages"]]}

    async def _record(self, claimed: ClaimedRun, event: StreamEvent, outcome: _Outcome) -> None:
        runs, identity = self._services.runs, claimed.identity
        match event:
            case TokenText(text=text):
                if not outcome.tokens:
                    first = time.perf_counter() - outcome.started
                    self._runtime.metrics.time_to_first_token.observe(first)
                outcome.tokens += 1
                await runs.record_event(identity, "token", {"text": text})
            case ToolCallsProposed(content=content, calls=calls):
                await runs.record_tool_calls(identity, content, calls)
            case ToolFinished(outcome=tool):
                await runs.record_tool_result(identity, tool)
            case AssistantReplied(content=content):
                outcome.reply = content
                await runs.record_reply(identity, content)
            case InterruptRequested(request=request):
                outcome.interrupt = request
                await runs.record_event(identity, "interrupt", {"request": request})
