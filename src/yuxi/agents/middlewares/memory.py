"""Main-agent long-term memory: the low-trust memory prompt and the four memory tools.

Owner of the memory prompt and tool assembly (design.md §2, §4). Only the chatbot graph calls
:func:`create_memory_middleware`, once per new run (chat or resume), after re-querying the
user's ``enable_memory`` switch:

* switch off → ``None``: MEMORY.md is not opened and no memory tool exists in the run;
* switch on → a :class:`YuxiMemoryMiddleware` that appends the memory block to the system message
  of every model call and registers exactly ``remember_memory``, ``search_thread_messages``,
  ``read_thread_messages`` and ``list_threads``. Their model-visible schemas carry no identity
  or path: identity comes only from ``ToolRuntime.context`` (a
  :class:`~yuxi.agents.context.RunIdentity`).

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

from yuxi.agents.context import RunIdentity, trusted_context
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


class YuxiMemoryMiddleware(AgentMiddleware[AgentState[Any], RunIdentity, Any]):
    """Adds the memory block to every model call; carries the four memory tools."""

    def __init__(
        self, *, snapshot: MemorySnapshot, tools: Sequence[BaseTool], nonce: str | None = None
    ) -> None:
        super().__init__()
        self.snapshot = snapshot
        self.tools = tuple(tools)
        #: Drawn once per run (the middleware is built once per run): the data's boundary.
        self.nonce = nonce if nonce is not None else new_nonce()
        self.memory_block = render_memory_block(snapshot.text, nonce=self.nonce)

    def _with_memory(self, request: ModelRequest[RunIdentity]) -> ModelRequest[RunIdentity]:
        """The one helper both the sync and the async path use."""
        return request.override(
            system_message=_append_to_system_message(request.system_message, self.memory_block)
        )

    def wrap_model_call(
        self,
        request: ModelRequest[RunIdentity],
        handler: Callable[[ModelRequest[RunIdentity]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        return handler(self._with_memory(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[RunIdentity],
        handler: Callable[[ModelRequest[RunIdentity]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        return await handler(self._with_memory(request))


_UNAUTHORIZED = "this call has no trusted top-level run identity; memory is not available here"


def _identity(runtime: ToolRuntime[RunIdentity | None, Any], bound: RunIdentity) -> RunIdentity:
    """The trusted identity of this call: a complete RunIdentity equal to the one built for."""
    context = trusted_context(runtime.context, require_worker=True)
    if context is None or context != bound:
        raise UnauthorizedRun(_UNAUTHORIZED)
    return context


def make_memory_tools(
    memory: MemoryPort, lookback: LookbackPort, bound: RunIdentity
) -> tuple[BaseTool, ...]:
    async def remember_memory(
        content: str,
        replaces: str | None = None,
        *,
        runtime: ToolRuntime[RunIdentity | None, Any],
    ) -> ToolMessage:
        async def call() -> MemoryWriteResult:
            identity = _identity(runtime, bound)
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
        runtime: ToolRuntime[RunIdentity | None, Any],
    ) -> ToolMessage:
        async def call() -> LookbackResult:
            identity = _identity(runtime, bound)
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
        runtime: ToolRuntime[RunIdentity | None, Any],
    ) -> ToolMessage:
        async def call() -> LookbackResult:
            identity = _identity(runtime, bound)
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
        runtime: ToolRuntime[RunIdentity | None, Any],
    ) -> ToolMessage:
        async def call() -> LookbackResult:
            identity = _identity(runtime, bound)
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


async def create_memory_middleware(
    *,
    memory: MemoryPort,
    lookback: LookbackPort,
    context: RunIdentity,
    on_snapshot: Callable[[MemorySnapshot], Awaitable[None]] | None = None,
) -> YuxiMemoryMiddleware | None:
    """Build the memory middleware for one new run, or ``None`` when memory is off.

    Re-queries the switch through ``memory.load_memory_snapshot`` (which opens no file when it is
    off). When on, ``on_snapshot`` is awaited once with the snapshot this run injects, so the
    worker can record its sha256 and size on the run.
    """
    snapshot = await memory.load_memory_snapshot(context.uid)
    if snapshot is None:
        return None
    if on_snapshot is not None:
        await on_snapshot(snapshot)
    return YuxiMemoryMiddleware(
        snapshot=snapshot, tools=make_memory_tools(memory, lookback, context)
    )
