"""The slices of the memory and lookback services the agent layer uses.

Graphs, middleware and tools accept anything with these coroutines, so unit tests can pass a
recording fake; production passes the real :class:`MemoryService` and :class:`LookbackService`
(checked statically below). Both raise :class:`~yuxi.errors.YuxiError` for a refusal and return
typed results; the tool adapter (:mod:`yuxi.agents.tools.tool_result`) tells the model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from yuxi.identity import RunIdentity
from yuxi.limits import LIST_THREADS_DEFAULT_ITEMS
from yuxi.services.lookback.service import LookbackResult
from yuxi.services.memory.service import MemorySnapshot, MemoryWriteResult

if TYPE_CHECKING:
    from yuxi.services.lookback.service import LookbackService
    from yuxi.services.memory.service import MemoryService
    from yuxi.services.workspace_file_service import WorkspaceFileService

__all__ = ["LookbackPort", "MemoryPort", "WorkspaceFilesPort"]


class MemoryPort(Protocol):
    async def load_memory_snapshot(self, uid: str) -> MemorySnapshot | None: ...

    async def remember_memory(
        self,
        identity: RunIdentity,
        content: object,
        replaces: object = None,
        *,
        tool_call_id: str | None = None,
    ) -> MemoryWriteResult: ...

    async def read_memory_file(self, uid: str) -> tuple[bytes, str]: ...

    async def agent_write_memory_file(
        self,
        identity: RunIdentity,
        data: bytes,
        *,
        tool_call_id: str | None = None,
        if_match: str | None = None,
    ) -> str: ...


class WorkspaceFilesPort(Protocol):
    async def agent_rewrite_file(
        self,
        identity: RunIdentity,
        path: str,
        rewrite: Callable[[bytes | None], bytes],
        *,
        max_bytes: int,
        read_current: bool = True,
    ) -> bytes: ...


class LookbackPort(Protocol):
    async def search_thread_messages(
        self,
        *,
        uid: str,
        query: object,
        limit: object = 5,
        after: object = None,
        before: object = None,
        thread_id: object = None,
        current_run_id: str | None = None,
    ) -> LookbackResult: ...

    async def read_thread_messages(
        self,
        *,
        uid: str,
        thread_id: object,
        message_id: object = None,
        limit: object = 20,
        include_tools: object = False,
    ) -> LookbackResult: ...

    async def list_threads(
        self,
        *,
        uid: str,
        before: object = None,
        limit: object = LIST_THREADS_DEFAULT_ITEMS,
        current_thread_id: str | None = None,
    ) -> LookbackResult: ...


if TYPE_CHECKING:

    def _lookback_service_is_a_port(service: LookbackService) -> LookbackPort:
        return service

    def _memory_service_is_a_port(service: MemoryService) -> MemoryPort:
        return service

    def _workspace_file_service_is_a_port(service: WorkspaceFileService) -> WorkspaceFilesPort:
        return service
