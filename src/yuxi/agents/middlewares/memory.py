"""Main-agent long-term memory: the low-trust memory prompt and the four memory tools.

Owner of the memory prompt and tool assembly (design.md §2, §4). Every new run (chat or
resume) reads the user's ``enable_memory`` switch again as it starts (in the statement that
claims it; MEMORY.md is read only when it is on), and runs on the chatbot graph compiled for
that answer:

* switch off → the graph without this middleware: MEMORY.md is not opened and no memory tool
  exists in the run;
* switch on → the graph with a :class:`YuxiMemoryMiddleware` (:func:`create_memory_middleware`),
  which appends the run's memory block to the system message of every model call and registers
  exactly ``remember_memory``, ``search_thread_messages``, ``read_thread_messages`` and
  ``list_threads``. Their model-visible schemas carry no identity or path.

The graph is shared by every run with memory on, so the middleware and its tools hold nothing of
any run: the block (:func:`run_memory`, rendered from the snapshot recorded as the run started)
and the identity come only from the run context of the call itself
(:class:`~yuxi.agents.context.RunContext`: ``request.runtime.context``, ``ToolRuntime.context``).
A call whose context carries no memory fails closed.

SubAgent graphs never construct this middleware.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain.agents.middleware.types import ExtendedModelResponse
from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool

from yuxi.agents.context import RunContext, RunMemory, trusted_context
from yuxi.agents.middlewares.taint import REMEMBER_MEMORY_TOOL
from yuxi.agents.ports import LookbackPort, MemoryPort
from yuxi.agents.prompts import (
    LIST_THREADS_DESCRIPTION,
    MEMORY_RULES,
    NO_MEMORY_LINE,
    READ_THREAD_MESSAGES_DESCRIPTION,
    REMEMBER_MEMORY_DESCRIPTION,
    SEARCH_THREAD_MESSAGES_DESCRIPTION,
)
from yuxi.agents.tools.run_tool import make_run_tool
from yuxi.agents.tools.tool_result import tool_message
from yuxi.errors import UnauthorizedRun
from yuxi.identity import RunIdentity
from yuxi.limits import LIST_THREADS_DEFAULT_ITEMS
from yuxi.services.lookback.service import LookbackResult
from yuxi.services.memory.service import MemorySnapshot, MemoryWriteResult
from yuxi.utils.prompt_framing import close_marker, neutralize_markup, new_nonce, open_marker

__all__ = [
    "MEMORY_DATA_TAG",
    "MEMORY_RULES",
    "MEMORY_TOOL_NAMES",
    "NO_MEMORY_LINE",
    "YuxiMemoryMiddleware",
    "create_memory_middleware",
    "render_memory_block",
    "run_memory",
]

MEMORY_TOOL_NAMES = (
    REMEMBER_MEMORY_TOOL,
    "search_thread_messages",
    "read_thread_messages",
    "list_threads",
)

#: The name of the memory block's markers (each carries the run's nonce).
MEMORY_DATA_TAG = "memory_data"


def render_memory_block(text: str, *, nonce: str) -> str:
    """The block appended to the system message: the rules, then the data (if any).

    The data sits between markers that carry ``nonce`` (drawn once per run), and every tag-like
    start in it is neutralised (:mod:`yuxi.utils.prompt_framing`): memory text can neither
    close the block nor open another one.
    """
    rules = MEMORY_RULES.format(nonce=nonce)
    if not text.strip():
        return f"{rules}\n\n{NO_MEMORY_LINE}"
    body = neutralize_markup(text.strip("\n"))
    opening = open_marker(MEMORY_DATA_TAG, nonce)
    closing = close_marker(MEMORY_DATA_TAG, nonce)
    return f"{rules}\n\n{opening}\n{body}\n{closing}"


def _append_to_system_message(message: SystemMessage | None, block: str) -> SystemMessage:
    if message is None:
        return SystemMessage(content=block)
    content = message.content
    if isinstance(content, str):
        new_content: str | list[str | dict[Any, Any]] = (
            f"{content}\n\n{block}" if content else block
        )
    else:
        new_content = [*content, {"type": "text", "text": block}]
    return message.model_copy(update={"content": new_content})


def run_memory(snapshot: MemorySnapshot, *, nonce: str | None = None) -> RunMemory:
    """What one run injects: ``snapshot`` framed with a nonce drawn for this run alone."""
    nonce = nonce if nonce is not None else new_nonce()
    return RunMemory(snapshot, nonce, render_memory_block(snapshot.text, nonce=nonce))


_NO_MEMORY = "this run has no memory snapshot; memory is not available here"


def _context_memory(context: object) -> RunMemory:
    """The memory of the run ``context`` belongs to; refuses a context without one."""
    if not isinstance(context, RunContext) or context.memory is None:
        raise UnauthorizedRun(_NO_MEMORY)
    return context.memory


class YuxiMemoryMiddleware(AgentMiddleware[AgentState[Any], RunContext, Any]):
    """Adds the run's memory block to every model call; carries the four memory tools."""

    def __init__(self, *, tools: Sequence[BaseTool]) -> None:
        super().__init__()
        self.tools = tuple(tools)

    def _with_memory(self, request: ModelRequest[RunContext]) -> ModelRequest[RunContext]:
        """The one helper both the sync and the async path use."""
        block = _context_memory(request.runtime.context).block
        return request.override(
            system_message=_append_to_system_message(request.system_message, block)
        )

    def wrap_model_call(
        self,
        request: ModelRequest[RunContext],
        handler: Callable[[ModelRequest[RunContext]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        return handler(self._with_memory(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[RunContext],
        handler: Callable[[ModelRequest[RunContext]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        return await handler(self._with_memory(request))


_UNAUTHORIZED = "this call has no trusted top-level run identity; memory is not available here"


def _identity(runtime: ToolRuntime[RunContext | None, Any]) -> RunIdentity:
    """The trusted identity of this call: a complete top-level run context with memory on."""
    context = trusted_context(runtime.context, require_worker=True)
    if context is None or context.memory is None:
        raise UnauthorizedRun(_UNAUTHORIZED)
    return context.identity


def make_memory_tools(memory: MemoryPort, lookback: LookbackPort) -> tuple[BaseTool, ...]:
    async def remember_memory(
        content: str,
        replaces: str | None = None,
        *,
        runtime: ToolRuntime[RunContext | None, Any],
    ) -> ToolMessage:
        async def call() -> MemoryWriteResult:
            identity = _identity(runtime)
            return await memory.remember_memory(
                identity, content, replaces, tool_call_id=runtime.tool_call_id
            )

        return await tool_message(REMEMBER_MEMORY_TOOL, runtime, call)

    async def search_thread_messages(
        query: str,
        limit: int = 5,
        after: str | None = None,
        before: str | None = None,
        thread_id: str | None = None,
        *,
        runtime: ToolRuntime[RunContext | None, Any],
    ) -> ToolMessage:
        async def call() -> LookbackResult:
            identity = _identity(runtime)
            return await lookback.search_thread_messages(
                uid=identity.uid,
                query=query,
                limit=limit,
                after=after,
                before=before,
                thread_id=thread_id,
                current_run_id=identity.run_id,
            )

        return await tool_message("search_thread_messages", runtime, call)

    async def read_thread_messages(
        thread_id: str,
        message_id: int | None = None,
        limit: int = 20,
        include_tools: bool = False,
        *,
        runtime: ToolRuntime[RunContext | None, Any],
    ) -> ToolMessage:
        async def call() -> LookbackResult:
            identity = _identity(runtime)
            return await lookback.read_thread_messages(
                uid=identity.uid,
                thread_id=thread_id,
                message_id=message_id,
                limit=limit,
                include_tools=include_tools,
            )

        return await tool_message("read_thread_messages", runtime, call)

    async def list_threads(
        before: str | None = None,
        limit: int = LIST_THREADS_DEFAULT_ITEMS,
        *,
        runtime: ToolRuntime[RunContext | None, Any],
    ) -> ToolMessage:
        async def call() -> LookbackResult:
            identity = _identity(runtime)
            return await lookback.list_threads(
                uid=identity.uid,
                before=before,
                limit=limit,
                current_thread_id=identity.thread_id,
            )

        return await tool_message("list_threads", runtime, call)

    return (
        make_run_tool(
            remember_memory,
            name=REMEMBER_MEMORY_TOOL,
            description=REMEMBER_MEMORY_DESCRIPTION,
        ),
        make_run_tool(
            search_thread_messages,
            name="search_thread_messages",
            description=SEARCH_THREAD_MESSAGES_DESCRIPTION,
        ),
        make_run_tool(
            read_thread_messages,
            name="read_thread_messages",
            description=READ_THREAD_MESSAGES_DESCRIPTION,
        ),
        make_run_tool(list_threads, name="list_threads", description=LIST_THREADS_DESCRIPTION),
    )


def create_memory_middleware(*, memory: MemoryPort, lookback: LookbackPort) -> YuxiMemoryMiddleware:
    """The memory middleware of the chatbot graph compiled with memory on (shared by its runs)."""
    return YuxiMemoryMiddleware(tools=make_memory_tools(memory, lookback))
