"""Generic workspace file tools: read, write and edit files of the run's user.

The tools are built once per compiled graph and shared by its runs: the identity and the
workspace come only from the run context of the call itself (``ToolRuntime.context``, a
:class:`~yuxi.agents.context.RunContext` whose workspace belongs to its identity's user; anything
else is refused). Paths are workspace-relative and validated by :mod:`yuxi.workspace` (no ``..``, no
absolute paths, no symlinks); every failure is an error ``ToolMessage`` (one adapter,
:mod:`yuxi.agents.tools.tool_result`), never an exception.

``write_workspace_file`` and ``edit_workspace_file`` are sensitive (:data:`SENSITIVE_TOOLS`): the
chatbot graph pauses them for human approval. ``remember_memory`` is not on that list. When they
touch ``agents/MEMORY.md`` they go through :meth:`MemoryService.agent_write_memory_file`, the
writer that takes the same per-uid lock and publish as ``remember_memory``, so no update is lost,
and the same gate: the run must still own a live lease and memory must still be on when the
(approved) write lands; it is recorded as a version with the run's provenance. Tools built
with ``allow_memory_file=False`` (memory off, SubAgents) refuse MEMORY.md altogether, and so does
any call whose run context carries no memory, so the
memory switch and the SubAgent boundary cannot be bypassed through a generic file tool.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Literal

from langchain.tools import ToolRuntime
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool

from yuxi.agents.context import RunContext, trusted_context
from yuxi.agents.ports import MemoryPort, WorkspaceFilesPort
from yuxi.agents.prompts import (
    EDIT_WORKSPACE_FILE_DESCRIPTION,
    READ_WORKSPACE_FILE_DESCRIPTION,
    WRITE_WORKSPACE_FILE_DESCRIPTION,
)
from yuxi.agents.tools.run_tool import make_run_tool
from yuxi.agents.tools.tool_result import tool_message
from yuxi.errors import (
    EditConflict,
    FileTooLarge,
    ForbiddenPath,
    InvalidArgument,
    NotText,
    StorageUnavailable,
    UnauthorizedRun,
    WorkspaceFileNotFound,
)
from yuxi.limits import TOOL_READ_MAX_BYTES, TOOL_WRITE_MAX_BYTES
from yuxi.utils.string_utils import cut_to_char_boundary
from yuxi.workspace.filesystem import MEMORY_PATH, split_relative_path

__all__ = [
    "SENSITIVE_TOOLS",
    "WorkspaceFileResult",
    "make_read_workspace_tool",
    "make_workspace_tools",
]

_log = logging.getLogger(__name__)

#: Tools that pause for human approval (LangChain human-in-the-loop middleware).
SENSITIVE_TOOLS = ("write_workspace_file", "edit_workspace_file")


_UNAUTHORIZED = "this call has no trusted run identity for this workspace"
_MEMORY_REFUSED = (
    "agents/MEMORY.md is not available to this agent (memory is off, or this is a SubAgent)"
)


@dataclass(frozen=True)
class WorkspaceFileResult:
    """A file read (``ok``, with its text), written or edited; ``size`` in UTF-8 bytes."""

    status: Literal["ok", "written", "edited"]
    path: str
    size: int
    content: str | None = None
    truncated: bool = False

    def to_payload(self) -> dict[str, Any]:
        payload: dict[str, Any] = {"status": self.status, "path": self.path}
        if self.content is not None:
            payload["content"] = self.content
        payload["size"] = self.size
        if self.truncated:
            payload["truncated"] = True
        return payload


def _normalize_path(path: object) -> str:
    """Validated workspace-relative path; one leading ``/`` (workspace root) is accepted."""
    if isinstance(path, str) and path.startswith("/") and not path.startswith("//"):
        path = path[1:]
    return "/".join(split_relative_path(path))


class _Bound:
    """What every tool closure shares: the memory writer, the file writer, the MEMORY.md rule.

    Nothing of a run: the tools are shared by every run of their graph."""

    def __init__(
        self,
        memory: MemoryPort | None,
        files: WorkspaceFilesPort | None,
        *,
        allow_memory_file: bool,
    ) -> None:
        self.memory = memory
        self.files = files
        self.allow_memory_file = allow_memory_file and memory is not None

    def run(self, runtime: ToolRuntime[RunContext | None, Any]) -> RunContext:
        """The run this call belongs to; its workspace is its identity's user's."""
        context = trusted_context(runtime.context, require_worker=False)
        if context is None:
            raise UnauthorizedRun(_UNAUTHORIZED)
        return context

    def resolve(self, path: object, run: RunContext) -> tuple[str, bool]:
        """``(normalized path, is MEMORY.md)``; raises ``UnsafePath`` or refuses MEMORY.md."""
        normalized = _normalize_path(path)
        is_memory = normalized == MEMORY_PATH
        if is_memory and not (self.allow_memory_file and run.memory is not None):
            raise ForbiddenPath(_MEMORY_REFUSED)
        return normalized, is_memory

    def memory_writer(self) -> MemoryPort:
        assert self.memory is not None  # allow_memory_file implies a memory writer
        return self.memory

    def file_writer(self) -> WorkspaceFilesPort:
        assert self.files is not None  # only the writing tools, which are built with one
        return self.files


def _decode(data: bytes, path: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise NotText(f"{path} is not UTF-8 text") from None


def _encode(text: str, name: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgument(f"{name} is not valid Unicode") from None


def _read_tool(bound: _Bound) -> BaseTool:
    async def read(path: str, runtime: ToolRuntime[RunContext | None, Any]) -> WorkspaceFileResult:
        run = bound.run(runtime)
        normalized, _ = bound.resolve(path, run)
        try:
            data, truncated = await run.workspace.read_file_prefix(normalized, TOOL_READ_MAX_BYTES)
        except OSError as exc:
            _log.warning("read_workspace_file failed: %r", exc)
            raise StorageUnavailable("the workspace is not readable right now") from None
        if truncated:
            data = cut_to_char_boundary(data)
        text = _decode(data, normalized)
        return WorkspaceFileResult("ok", normalized, len(data), text, truncated)

    async def read_workspace_file(
        path: str, *, runtime: ToolRuntime[RunContext | None, Any]
    ) -> ToolMessage:
        return await tool_message("read_workspace_file", runtime, lambda: read(path, runtime))

    return make_run_tool(
        read_workspace_file,
        name="read_workspace_file",
        description=READ_WORKSPACE_FILE_DESCRIPTION,
    )


def _write_tool(bound: _Bound) -> BaseTool:
    async def write(
        path: str, content: str, runtime: ToolRuntime[RunContext | None, Any]
    ) -> WorkspaceFileResult:
        run = bound.run(runtime)
        identity = run.identity
        normalized, is_memory = bound.resolve(path, run)
        data = _encode(content, "content")
        if len(data) > TOOL_WRITE_MAX_BYTES:
            raise FileTooLarge(f"content is larger than {TOOL_WRITE_MAX_BYTES} bytes")
        try:
            if is_memory:
                await bound.memory_writer().agent_write_memory_file(
                    identity, data, tool_call_id=runtime.tool_call_id
                )
            else:
                # Under the run's live lease and the user's workspace lock.
                await bound.file_writer().agent_rewrite_file(
                    identity,
                    normalized,
                    lambda _: data,
                    max_bytes=TOOL_WRITE_MAX_BYTES,
                    read_current=False,
                )
        except OSError as exc:
            _log.warning("write_workspace_file failed: %r", exc)
            raise StorageUnavailable("the file was not written; try again") from None
        return WorkspaceFileResult("written", normalized, len(data))

    async def write_workspace_file(
        path: str, content: str, *, runtime: ToolRuntime[RunContext | None, Any]
    ) -> ToolMessage:
        return await tool_message(
            "write_workspace_file", runtime, lambda: write(path, content, runtime)
        )

    return make_run_tool(
        write_workspace_file,
        name="write_workspace_file",
        description=WRITE_WORKSPACE_FILE_DESCRIPTION,
    )


def _edit_tool(bound: _Bound) -> BaseTool:
    async def edit(
        path: str, old: str, new: str, runtime: ToolRuntime[RunContext | None, Any]
    ) -> WorkspaceFileResult:
        run = bound.run(runtime)
        identity = run.identity
        if not old:
            raise InvalidArgument("`old` must not be empty")
        normalized, is_memory = bound.resolve(path, run)

        def replaced(raw: bytes) -> bytes:
            text = _decode(raw, normalized)
            count = text.count(old)
            if count != 1:
                raise EditConflict(
                    f"`old` occurs {count} times in {normalized}; it must occur exactly once"
                )
            data = _encode(text.replace(old, new, 1), "`new`")
            if len(data) > TOOL_WRITE_MAX_BYTES:
                raise FileTooLarge(f"the edited file would exceed {TOOL_WRITE_MAX_BYTES} bytes")
            return data

        def rewrite(current: bytes | None) -> bytes:
            if current is None:
                raise WorkspaceFileNotFound(f"file not found: {normalized}")
            return replaced(current)

        try:
            if is_memory:
                raw, etag = await bound.memory_writer().read_memory_file(identity.uid)
                data = replaced(raw)
                # If-Match on the version just read: a concurrent remember_memory is never lost.
                await bound.memory_writer().agent_write_memory_file(
                    identity, data, tool_call_id=runtime.tool_call_id, if_match=etag
                )
            else:
                # Read, replace and publish under the run's live lease and the workspace lock:
                # a user's edit in between is never lost.
                data = await bound.file_writer().agent_rewrite_file(
                    identity, normalized, rewrite, max_bytes=TOOL_WRITE_MAX_BYTES
                )
        except OSError as exc:
            _log.warning("edit_workspace_file failed: %r", exc)
            raise StorageUnavailable("the file was not edited; try again") from None
        return WorkspaceFileResult("edited", normalized, len(data))

    async def edit_workspace_file(
        path: str, old: str, new: str, *, runtime: ToolRuntime[RunContext | None, Any]
    ) -> ToolMessage:
        return await tool_message(
            "edit_workspace_file", runtime, lambda: edit(path, old, new, runtime)
        )

    return make_run_tool(
        edit_workspace_file,
        name="edit_workspace_file",
        description=EDIT_WORKSPACE_FILE_DESCRIPTION,
    )


def make_workspace_tools(
    *,
    memory: MemoryPort,
    files: WorkspaceFilesPort,
    allow_memory_file: bool = True,
) -> list[BaseTool]:
    """``read_workspace_file``, ``write_workspace_file``, ``edit_workspace_file``, acting on the
    workspace of the run each call belongs to.

    Writes of ordinary files go through ``files`` (the run's live lease and the user's
    workspace lock); MEMORY.md through ``memory``."""
    bound = _Bound(memory, files, allow_memory_file=allow_memory_file)
    return [_read_tool(bound), _write_tool(bound), _edit_tool(bound)]


def make_read_workspace_tool() -> BaseTool:
    """Read-only ``read_workspace_file`` that refuses MEMORY.md (for SubAgents)."""
    return _read_tool(_Bound(None, None, allow_memory_file=False))
