"""The slices of the memory and lookback services the agent layer uses.

Graphs, middleware and tools accept anything with these coroutines, so unit tests can pass a
recording fake; production passes the real :class:`MemoryService` (checked statically below).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from yuxi.services.memory_service import MemorySnapshot

if TYPE_CHECKING:
    from yuxi.services.lookback_service import LookbackService
    from yuxi.services.memory_service import MemoryService

__all__ = ["LookbackPort", "MemoryPort"]


class MemoryPort(Protocol):
    async def load_memory_snapshot(self, uid: str) -> MemorySnapshot | None: ...

    async def remember_memory(
        self,
        *,
        uid: str,
        thread_id: str,
        run_id: str,
        request_id: str,
        worker_id: str,
        content: object,
        replaces: object = None,
    ) -> dict[str, Any]: ...

    async def read_memory_file(self, uid: str) -> tuple[bytes, str]: ...

    async def write_memory_file(
        self, uid: str, data: bytes, *, if_match: str | None = None
    ) -> str: ...


class LookbackPort(Protocol):
    async def search_thread_messages(
        self, *, uid: str, query: object, limit: object = 5
    ) -> dict[str, Any]: ...

    async def read_thread_messages(
        self,
        *,
        uid: str,
        thread_id: object,
        message_id: object = None,
        limit: object = 20,
        include_tools: object = False,
    ) -> dict[str, Any]: ...


if TYPE_CHECKING:

    def _lookback_service_is_a_port(service: LookbackService) -> LookbackPort:
        return service

    def _memory_service_is_a_port(service: MemoryService) -> MemoryPort:
        return service
