"""Test doubles for the agent unit tests: a recording memory service, a spying workspace and a
capturing offline model. No database anywhere."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.tools import BaseTool
from pydantic import Field

from yuxi.agents.context import RunIdentity
from yuxi.agents.models.offline import OfflineChatModel
from yuxi.errors import WorkspaceFileNotFound
from yuxi.services.memory_service import MemorySnapshot
from yuxi.workspace.filesystem import MEMORY_PATH, Workspace

UID = "user-1"
CTX = RunIdentity(
    uid=UID, thread_id="thread-a", run_id="run-1", request_id="req-1", worker_id="worker-tok-1"
)


def forged_identity(**values: object) -> RunIdentity:
    """A RunIdentity whose values skip validation: what a forged context object would carry."""
    forged = object.__new__(RunIdentity)
    merged = {
        "uid": CTX.uid,
        "thread_id": CTX.thread_id,
        "run_id": CTX.run_id,
        "request_id": CTX.request_id,
        "worker_id": CTX.worker_id,
        **values,
    }
    for name, value in merged.items():
        object.__setattr__(forged, name, value)
    return forged


class MemoryFileRead(AssertionError):
    """Raised by :class:`SpyWorkspace` when MEMORY.md is read while that is forbidden."""


class SpyWorkspace(Workspace):
    """A real workspace that records every read and write (and can forbid MEMORY.md reads)."""

    def __init__(self, root: Path, uid: str = UID, *, forbid_memory_reads: bool = False) -> None:
        super().__init__(root, uid)
        self.reads: list[str] = []
        self.writes: list[str] = []
        self.forbid_memory_reads = forbid_memory_reads

    def _record_read(self, path: str) -> None:
        self.reads.append(path)
        if self.forbid_memory_reads and path.strip("/") == MEMORY_PATH:
            raise MemoryFileRead(f"MEMORY.md must not be read here (path {path!r})")

    def read_authorized_file_prefix_sync(self, path: str, max_bytes: int) -> tuple[bytes, bool]:
        self._record_read(path)
        return super().read_authorized_file_prefix_sync(path, max_bytes)

    def read_file_sync(self, path: str, max_bytes: int) -> bytes:
        self._record_read(path)
        return super().read_file_sync(path, max_bytes)

    def replace_authorized_file_sync(self, path: str, data: bytes) -> None:
        self.writes.append(path)
        super().replace_authorized_file_sync(path, data)

    # test conveniences (synchronous, bypass the spy)
    def put(self, path: str, text: str) -> None:
        Workspace.replace_authorized_file_sync(self, path, text.encode("utf-8"))

    def get(self, path: str) -> str | None:
        try:
            return Workspace.read_file_sync(self, path, 1 << 22).decode("utf-8")
        except WorkspaceFileNotFound:
            return None

    @property
    def memory_reads(self) -> list[str]:
        return [p for p in self.reads if p.strip("/") == MEMORY_PATH]


class FakeMemory:
    """Same coroutine names as MemoryService; records calls; the switch is a plain flag."""

    def __init__(self, workspace: SpyWorkspace, *, enabled: bool = True) -> None:
        self.workspace = workspace
        self.enabled = enabled
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def calls_to(self, name: str) -> list[dict[str, Any]]:
        return [kwargs for called, kwargs in self.calls if called == name]

    async def load_memory_snapshot(self, uid: str) -> MemorySnapshot | None:
        self.calls.append(("load_memory_snapshot", {"uid": uid}))
        if not self.enabled:
            return None  # like the real service: switch off → MEMORY.md is not opened
        try:
            data, truncated = await self.workspace.read_authorized_file_prefix(
                MEMORY_PATH, 24 * 1024
            )
        except WorkspaceFileNotFound:
            data, truncated = b"", False
        text = data.decode("utf-8")
        if not text.strip():
            text = ""
        raw = text.encode("utf-8")
        return MemorySnapshot(text, hashlib.sha256(raw).hexdigest(), len(raw), truncated)

    async def remember_memory(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(("remember_memory", kwargs))
        return {
            "status": "updated",
            "path": "/agents/MEMORY.md",
            "size": len(str(kwargs["content"]).encode("utf-8")) + 1,
            "start_line": 1,
            "end_line": 1,
        }

    async def search_thread_messages(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(("search_thread_messages", kwargs))
        return {
            "status": "ok",
            "items": [
                {
                    "thread_id": "thread-old",
                    "title": "旧对话",
                    "message_id": 7,
                    "role": "user",
                    "content": f"…{kwargs['query']}…",
                }
            ],
        }

    async def read_thread_messages(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(("read_thread_messages", kwargs))
        return {
            "status": "ok",
            "thread_id": kwargs["thread_id"],
            "messages": [{"message_id": 7, "role": "user", "content": "hello"}],
        }

    async def read_memory_file(self, uid: str) -> tuple[bytes, str]:
        self.calls.append(("read_memory_file", {"uid": uid}))
        try:
            data = await self.workspace.read_file(MEMORY_PATH, 128 * 1024)
        except WorkspaceFileNotFound:
            data = b""
        return data, '"' + hashlib.sha256(data).hexdigest() + '"'

    async def write_memory_file(self, uid: str, data: bytes, *, if_match: str | None = None) -> str:
        self.calls.append(("write_memory_file", {"uid": uid, "data": data, "if_match": if_match}))
        await self.workspace.replace_authorized_file(MEMORY_PATH, data)
        return '"' + hashlib.sha256(data).hexdigest() + '"'


class CapturingModel(OfflineChatModel):
    """The offline model, recording every message list it receives and every tool binding.

    ``bind_tools`` returns a (shallow) copy, so the capture lists are shared with the copy.
    """

    seen: list[list[BaseMessage]] = Field(default_factory=list)
    bindings: list[tuple[str, ...]] = Field(default_factory=list)

    def bind_tools(self, tools: Any, *, tool_choice: str | None = None, **kwargs: Any) -> Any:
        names = tuple(t.name if isinstance(t, BaseTool) else str(t) for t in tools)
        self.bindings.append(names)
        return super().bind_tools(tools, tool_choice=tool_choice, **kwargs)

    def respond(self, messages: Any) -> Any:
        self.seen.append(list(messages))
        return super().respond(messages)

    def system_prompts(self) -> list[str]:
        return [m.text for messages in self.seen for m in messages if isinstance(m, SystemMessage)]

    def all_text(self) -> str:
        return "\n".join(
            m.content if isinstance(m.content, str) else m.text
            for messages in self.seen
            for m in messages
        )
