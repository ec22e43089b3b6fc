"""Test doubles for the agent unit tests: a recording memory service, a spying workspace and a
capturing offline model. No database anywhere."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

from yuxi.agents.context import RunIdentity
from yuxi.agents.models.offline import OfflineChatModel
from yuxi.errors import (
    MemoryDisabled,
    MemoryQuotaExceeded,
    MemoryTooLarge,
    PreconditionFailed,
    UnauthorizedRun,
    WorkspaceFileNotFound,
)
from yuxi.limits import (
    MEMORY_BYTES_PER_RUN,
    MEMORY_CONTENT_MAX_BYTES,
    MEMORY_FILE_MAX_BYTES,
    MEMORY_PROMPT_MAX_BYTES,
    MEMORY_REPLACES_MAX_BYTES,
    MEMORY_WRITES_PER_RUN,
)
from yuxi.services.lookback.service import LookbackResult
from yuxi.services.memory import (
    apply_add,
    apply_replace,
    decode_memory_file,
    encode_result,
    snapshot_of,
)
from yuxi.services.memory.service import MemorySnapshot, MemoryWriteResult, QuotaRemaining
from yuxi.utils.string_utils import check_text
from yuxi.workspace.filesystem import MEMORY_PATH, Workspace, etag_for, if_match_allows

UID = "user-1"
CTX = RunIdentity(
    uid=UID, thread_id="thread-a", run_id="run-1", request_id="req-1", worker_id="worker-tok-1"
)


def call_schema(tool: BaseTool) -> dict[str, Any]:
    """The JSON schema the model sees for ``tool`` (narrowed from langchain's ``ArgsSchema``)."""
    schema = tool.tool_call_schema
    assert not isinstance(schema, dict) and issubclass(schema, BaseModel)
    return schema.model_json_schema()


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

    def read_file_prefix_sync(self, path: str, max_bytes: int) -> tuple[bytes, bool]:
        self._record_read(path)
        return super().read_file_prefix_sync(path, max_bytes)

    def read_file_sync(self, path: str, max_bytes: int) -> bytes:
        self._record_read(path)
        return super().read_file_sync(path, max_bytes)

    def replace_file_sync(self, path: str, data: bytes) -> None:
        self.writes.append(path)
        super().replace_file_sync(path, data)

    # test conveniences (synchronous, bypass the spy)
    def put(self, path: str, text: str) -> None:
        Workspace.replace_file_sync(self, path, text.encode("utf-8"))

    def get(self, path: str) -> str | None:
        try:
            return Workspace.read_file_sync(self, path, 1 << 22).decode("utf-8")
        except WorkspaceFileNotFound:
            return None

    @property
    def memory_reads(self) -> list[str]:
        return [p for p in self.reads if p.strip("/") == MEMORY_PATH]


class FakeMemory:
    """Same coroutines as MemoryService and LookbackService, no database; records calls.

    The switch is a plain flag, a lease-holding identity is trusted without a run row, the
    run's write quota is counted in a dict and versions are only named (``mv_`` ids); the
    rest is the real thing: the snapshot and the add/dedupe/replace edits run the same pure
    functions as :class:`MemoryService` (``yuxi.services.memory._text``), and
    ``tests/integration/test_memory_contract.py`` runs one test suite against both.
    ``remember_result`` scripts the answer of ``remember_memory`` instead (the file is left
    alone), for tests of what the tools pass through. The history tools answer canned pages.
    """

    def __init__(
        self,
        workspace: SpyWorkspace,
        *,
        enabled: bool = True,
        remember_result: MemoryWriteResult | None = None,
    ) -> None:
        self.workspace = workspace
        self.enabled = enabled
        self.remember_result = remember_result
        self.calls: list[tuple[str, dict[str, Any]]] = []
        #: run id → (memory writes, bytes added) so far.
        self.quota_used: dict[str, tuple[int, int]] = {}

    def calls_to(self, name: str) -> list[dict[str, Any]]:
        return [kwargs for called, kwargs in self.calls if called == name]

    async def load_memory_snapshot(self, uid: str) -> MemorySnapshot | None:
        self.calls.append(("load_memory_snapshot", {"uid": uid}))
        if not self.enabled:
            return None  # like the real service: switch off → MEMORY.md is not opened
        try:
            data, truncated = await self.workspace.read_file_prefix(
                MEMORY_PATH, MEMORY_PROMPT_MAX_BYTES
            )
        except WorkspaceFileNotFound:
            data, truncated = b"", False
        return snapshot_of(data, truncated)

    async def remember_memory(
        self,
        identity: RunIdentity,
        content: object,
        replaces: object = None,
        *,
        tool_call_id: str | None = None,
    ) -> MemoryWriteResult:
        self.calls.append(
            (
                "remember_memory",
                {
                    "uid": identity.uid,
                    "thread_id": identity.thread_id,
                    "run_id": identity.run_id,
                    "request_id": identity.request_id,
                    "worker_id": identity.worker_id,
                    "content": content,
                    "replaces": replaces,
                    "tool_call_id": tool_call_id,
                },
            )
        )
        if self.remember_result is not None:
            return self.remember_result
        if not identity.holds_lease or identity.uid != self.workspace.uid:
            raise UnauthorizedRun("this run may not write memory")
        text = check_text("content", content, max_bytes=MEMORY_CONTENT_MAX_BYTES)
        old = (
            None
            if replaces is None
            else check_text("replaces", replaces, max_bytes=MEMORY_REPLACES_MAX_BYTES)
        )
        if not self.enabled:
            raise MemoryDisabled("memory is turned off for this user")
        try:
            data, truncated = await self.workspace.read_file_prefix(
                MEMORY_PATH, MEMORY_FILE_MAX_BYTES
            )
        except WorkspaceFileNotFound:
            data, truncated = b"", False
        if truncated:
            raise MemoryTooLarge(f"MEMORY.md is larger than {MEMORY_FILE_MAX_BYTES} bytes")
        base = decode_memory_file(data)
        edit = apply_add(base, text) if old is None else apply_replace(base, old, text)
        writes, used = self.quota_used.get(identity.run_id, (0, 0))
        if not edit.changed:
            return MemoryWriteResult(
                "unchanged",
                "/" + MEMORY_PATH,
                len(data),
                edit.start_line,
                edit.end_line,
                QuotaRemaining(MEMORY_WRITES_PER_RUN - writes, MEMORY_BYTES_PER_RUN - used),
            )
        out = encode_result(edit.text)
        added = len(text.strip().encode("utf-8"))
        if writes + 1 > MEMORY_WRITES_PER_RUN or used + added > MEMORY_BYTES_PER_RUN:
            raise MemoryQuotaExceeded("this run has used its memory write quota")
        await self.workspace.replace_file(MEMORY_PATH, out)
        self.quota_used[identity.run_id] = (writes + 1, used + added)
        return MemoryWriteResult(
            "updated",
            "/" + MEMORY_PATH,
            len(out),
            edit.start_line,
            edit.end_line,
            QuotaRemaining(MEMORY_WRITES_PER_RUN - writes - 1, MEMORY_BYTES_PER_RUN - used - added),
            "mv_" + uuid.uuid4().hex,
        )

    async def search_thread_messages(self, **kwargs: Any) -> LookbackResult:
        self.calls.append(("search_thread_messages", kwargs))
        return LookbackResult(
            {
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
        )

    async def read_thread_messages(self, **kwargs: Any) -> LookbackResult:
        self.calls.append(("read_thread_messages", kwargs))
        return LookbackResult(
            {
                "status": "ok",
                "thread_id": kwargs["thread_id"],
                "messages": [{"message_id": 7, "role": "user", "content": "hello"}],
            }
        )

    async def list_threads(self, **kwargs: Any) -> LookbackResult:
        self.calls.append(("list_threads", kwargs))
        return LookbackResult(
            {
                "status": "ok",
                "items": [
                    {
                        "thread_id": "thread-old",
                        "title": "旧对话",
                        "created_at": "2026-02-01T08:00:00Z",
                        "last_message_at": "2026-02-02T09:30:00Z",
                        "message_count": 2,
                        "first_user_line": "我喜欢绿茶",
                    }
                ],
                "truncated": False,
                "has_more": False,
            }
        )

    async def read_memory_file(self, uid: str) -> tuple[bytes, str]:
        self.calls.append(("read_memory_file", {"uid": uid}))
        try:
            data = await self.workspace.read_file(MEMORY_PATH, MEMORY_FILE_MAX_BYTES)
        except WorkspaceFileNotFound:
            data = b""
        return data, etag_for(data)

    async def agent_rewrite_file(
        self,
        identity: RunIdentity,
        path: str,
        rewrite: Callable[[bytes | None], bytes],
        *,
        max_bytes: int,
        read_current: bool = True,
    ) -> bytes:
        """The workspace-file port: the lease is trusted (no run row); the lock is real."""
        self.calls.append(("agent_rewrite_file", {"identity": identity, "path": path}))
        async with self.workspace.locked():
            current: bytes | None = None
            if read_current:
                try:
                    current = await self.workspace.read_file(path, max_bytes)
                except WorkspaceFileNotFound:
                    current = None
            data = rewrite(current)
            await self.workspace.write_file(path, data)
        return data

    async def agent_write_memory_file(
        self,
        identity: RunIdentity,
        data: bytes,
        *,
        tool_call_id: str | None = None,
        if_match: str | None = None,
    ) -> str:
        self.calls.append(
            (
                "agent_write_memory_file",
                {
                    "uid": identity.uid,
                    "run_id": identity.run_id,
                    "data": data,
                    "tool_call_id": tool_call_id,
                    "if_match": if_match,
                },
            )
        )
        if not identity.holds_lease or identity.uid != self.workspace.uid:
            raise UnauthorizedRun("this run may not write memory")
        if not self.enabled:
            raise MemoryDisabled("memory is turned off for this user")
        try:
            current = await self.workspace.read_file(MEMORY_PATH, MEMORY_FILE_MAX_BYTES)
        except WorkspaceFileNotFound:
            current = b""
        if not if_match_allows(if_match, etag_for(current)):
            raise PreconditionFailed("MEMORY.md changed since it was read")
        await self.workspace.replace_file(MEMORY_PATH, data)
        return etag_for(data)


class CapturingModel(OfflineChatModel):
    """The offline model, recording every message list it receives and every tool binding.

    ``bind_tools`` binds this very model, so every call through a binding is captured here.
    """

    seen: list[list[BaseMessage]] = Field(default_factory=list)
    bindings: list[tuple[str, ...]] = Field(default_factory=list)

    def bind_tools(
        self, tools: Any, *, tool_choice: str | dict[str, Any] | None = None, **kwargs: Any
    ) -> Any:
        names = tuple(t.name if isinstance(t, BaseTool) else str(t) for t in tools)
        self.bindings.append(names)
        return super().bind_tools(tools, tool_choice=tool_choice, **kwargs)

    def respond(self, messages: Any, **options: Any) -> Any:
        self.seen.append(list(messages))
        return super().respond(messages, **options)

    def system_prompts(self) -> list[str]:
        return [m.text for messages in self.seen for m in messages if isinstance(m, SystemMessage)]

    def all_text(self) -> str:
        return "\n".join(
            m.content if isinstance(m.content, str) else m.text
            for messages in self.seen
            for m in messages
        )


#: Every tool the offline model has a command for.
OFFLINE_TOOL_NAMES = (
    "remember_memory",
    "search_thread_messages",
    "read_thread_messages",
    "list_threads",
    "delegate_to_subagent",
    "read_workspace_file",
    "write_workspace_file",
)


def named_tool(name: str) -> StructuredTool:
    """A do-nothing tool with ``name`` (what the offline model may call is decided by names)."""

    async def run(x: str = "") -> str:
        return x

    return StructuredTool.from_function(coroutine=run, name=name, description=name)
