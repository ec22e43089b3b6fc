"""Execute one claimed run: assemble its graph, stream it, record every event, finish it.

The run's identity comes from the claim (the row this worker holds a lease on) as one
:class:`~yuxi.identity.RunIdentity`; it reaches the (shared, cached) graph and its tools only
inside the run's :class:`~yuxi.agents.context.RunContext`, the LangGraph run ``context``.
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
from langgraph.types import Durability, StateSnapshot

from yuxi.agents.middlewares.tool_call_integrity import closing_messages
from yuxi.limits import RUN_MAX_STEPS
from yuxi.observability.logs import bind_run
from yuxi.runtime.graph_assembly import (
    AssembledGraph,
    assemble_chatbot_graph,
    build_graph_input,
)
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
from yuxi.services.runs.service import ClaimedRun, LeaseLost, RunRecord
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
    #: Records of the step that ended the run's output, for the finishing statement.
    held: list[StreamEvent] = field(default_factory=list)
    #: The recording of the run's start, in flight while its graph starts.
    start: asyncio.Future[None] | None = None
    #: The start found the lease gone and stopped the run's work (``_stop_if_lost``).
    stopped: bool = False


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
            task = asyncio.current_task()
            if outcome.stopped and task is not None and task.uncancel() == 0:
                # Cancelled by its own start, which found the lease gone (and nobody else).
                raise LeaseLost(identity.run_id) from None
            status = "cancelled"
            raise
        finally:
            if outcome.start is not None:  # done by now, unless the run ended first
                outcome.start.cancel()
                await asyncio.gather(outcome.start, return_exceptions=True)
            if status:
                took = time.perf_counter() - outcome.started
                self._runtime.metrics.run_finished(status, took)
                _log.info("run %s %s after %.3f s", identity.run_id, status, took)

    async def _execute(self, claimed: ClaimedRun, outcome: _Outcome) -> str:
        identity = claimed.identity
        try:
            assembled = await assemble_chatbot_graph(
                claimed,
                services=self._services,
                runtime=self._runtime,
                workspace=self._workspace_for(identity.uid),
            )
            # The run's start is recorded while its graph starts (the checkpoint read, the
            # middleware, the first model call): nothing of the run is recorded, and no tool
            # runs, before it is — every step waits for it first (``_started``).
            outcome.start = asyncio.ensure_future(self._start(claimed, assembled))
            outcome.start.add_done_callback(_stop_if_lost(outcome))
            graph = assembled.graph
            graph_input = await build_graph_input(claimed, self._services.runs)
            config: RunnableConfig = {
                "configurable": {"thread_id": identity.thread_id},
                "recursion_limit": RUN_MAX_STEPS,
            }
            # The messages already in the thread's checkpoint (recorded by earlier runs) are
            # needed twice, and only then: a resume run's graph emits the interrupted step's
            # model message again (LangChain's approval middleware), which must not be recorded
            # twice; and a chat run whose predecessor did not complete must answer the calls it
            # left open (``why``, read by the claim). A chat run after a completed one (or
            # none) reads nothing here: its graph emits only messages it makes, and a completed
            # run left no call open (its limits fail a run rather than end it early).
            why = None if claimed.previous is None else claimed.previous.why
            checkpoint: StateSnapshot | None = None
            if claimed.run_type != "chat" or why is not None:
                checkpoint = await graph.aget_state(config)
            earlier = (checkpoint.values or {}).get("messages", []) if checkpoint else []
            graph_input = _with_closures(claimed, earlier, why, graph_input)
            translator = StreamTranslator(m.id for m in earlier if getattr(m, "id", None))
            outcome.usage = translator.usage
            async for mode, chunk in graph.astream(
                graph_input,
                config,
                context=assembled.context,
                stream_mode=["updates", "messages"],
                durability=CHECKPOINT_DURABILITY,
            ):
                await self._step(claimed, translator.feed(mode, chunk), outcome)
            await self._step(claimed, translator.flush(), outcome)
        except (LeaseLost, asyncio.CancelledError):
            raise
        except Exception as exc:
            failure = classify_failure(exc)
            if failure.expected:
                _log.warning("run %s failed: %s (%r)", identity.run_id, failure.code, exc)
            else:
                _log.exception("run %s failed", identity.run_id)
            await self._finish(
                claimed,
                outcome,
                "failed",
                error_code=failure.code,
                error_message=failure.message,
                output={"usage": outcome.usage.to_payload()},
            )
            return "failed"
        if outcome.interrupt is not None:
            await self._finish(
                claimed,
                outcome,
                "interrupted",
                output={"interrupt": outcome.interrupt, "usage": outcome.usage.to_payload()},
            )
            return "interrupted"
        await self._finish(
            claimed,
            outcome,
            "completed",
            output={"reply": outcome.reply, "usage": outcome.usage.to_payload()},
        )
        return "completed"

    async def _start(self, claimed: ClaimedRun, assembled: AssembledGraph) -> None:
        """The run's start, one fenced statement: its ``running`` event, the memory snapshot it
        sees and, for a chat run, the tool calls an earlier run left open (it was cancelled,
        failed or lost its lease between a call and its result) closed in the thread's records
        (the claim read them)."""
        snapshot = assembled.snapshot
        await self._services.runs.start(
            claimed.identity,
            attempt=claimed.attempt,
            snapshot=None if snapshot is None else (snapshot.sha256, snapshot.size),
            previous=claimed.previous,
        )

    @staticmethod
    async def _started(outcome: _Outcome, *, failing: bool = False) -> None:
        """Once the run's start is recorded. Its failure is the run's (LeaseLost: it is no
        longer this worker's run) — except, when the run is being recorded as failed anyway
        (``failing``), a failure that is not LeaseLost: it is what the run failed of, and the
        end is still recorded (fenced by the lease, as ever)."""
        if outcome.start is None:
            return
        try:
            await outcome.start
        except LeaseLost:
            raise
        except Exception:
            if not failing:
                raise

    async def _step(
        self, claimed: ClaimedRun, records: list[StreamEvent], outcome: _Outcome
    ) -> None:
        """Record what one step of the graph produced, in one fenced statement, once the run's
        start is recorded.

        A step that ends the run's output (the reply, an interruption) is held instead and
        recorded in the statement that finishes the run (:meth:`_finish`), a moment later:
        the graph only runs its closing hooks after it. Should another step follow after all,
        the held records go first in its statement, in order."""
        for record in records:
            self._note(record, outcome)
        records = [*outcome.held, *records]
        outcome.held = []
        if not records:
            return
        if isinstance(records[-1], AssistantReplied | InterruptRequested):
            outcome.held = records
            return
        await self._started(outcome)
        async with self._services.runs.recording(claimed.identity) as run_record:
            for record in records:
                _write(run_record, record)

    async def _finish(
        self,
        claimed: ClaimedRun,
        outcome: _Outcome,
        status: str,
        *,
        output: dict[str, Any],
        error_code: str | None = None,
        error_message: str | None = None,
    ) -> None:
        """The held records (if any) and the run's end, in one fenced statement, once the
        run's start is recorded."""
        await self._started(outcome, failing=status == "failed")
        held, outcome.held = outcome.held, []
        async with self._services.runs.recording(claimed.identity) as run_record:
            for record in held:
                _write(run_record, record)
            run_record.finish(
                status, output=output, error_code=error_code, error_message=error_message
            )

    def _note(self, event: StreamEvent, outcome: _Outcome) -> None:
        """What the run's outcome and metrics take from a record, as it arrives."""
        match event:
            case TokenText():
                if not outcome.tokens:
                    first = time.perf_counter() - outcome.started
                    self._runtime.metrics.time_to_first_token.observe(first)
                outcome.tokens += 1
            case AssistantReplied(content=content):
                outcome.reply = content
            case InterruptRequested(request=request):
                outcome.interrupt = request


def _stop_if_lost(outcome: _Outcome) -> Callable[[asyncio.Future[None]], None]:
    """A done-callback for the run's start: a start that found the lease gone cancels the
    run's task at once — whatever it is doing then (a checkpoint read, the middleware, a model
    call) is not wanted: the run is no longer this worker's. ``execute`` turns that
    cancellation into :class:`LeaseLost`."""
    run = asyncio.current_task()

    def stop(start: asyncio.Future[None]) -> None:
        if run is not None and not start.cancelled() and isinstance(start.exception(), LeaseLost):
            outcome.stopped = True
            run.cancel()

    return stop


def _with_closures(
    claimed: ClaimedRun, earlier: list[Any], why: str | None, graph_input: Any
) -> Any:
    """A chat run's input with the tool calls an earlier run left open answered in the
    checkpoint too, before the new user message, so the conversation is valid input again
    (their records were closed as the run started)."""
    if claimed.run_type != "chat":
        return graph_input
    closures = closing_messages(earlier, why or "Not completed: its run ended first.")
    if not closures:
        return graph_input
    return {"messages": [*closures, *graph_input["messages"]]}


def _write(run_record: RunRecord, event: StreamEvent) -> None:
    match event:
        case TokenText(text=text):
            run_record.event("token", {"text": text})
        case ToolCallsProposed(content=content, calls=calls):
            run_record.tool_calls(content, calls)
        case ToolFinished(outcome=tool):
            run_record.tool_result(tool)
        case AssistantReplied(content=content):
            run_record.reply(content)
        case InterruptRequested(request=request):
            run_record.event("interrupt", {"request": request})
