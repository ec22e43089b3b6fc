"""Generic workspace file tools: read, write and edit files of the run's user.

Identity comes only from ``ToolRuntime.context`` and must belong to the workspace the tools were
bound to. Paths are workspace-relative and validated by :mod:`yuxi.workspace` (no ``..``, no
absolute paths, no symlinks); every failure is a structured tool result, never an exception.

``write_workspace_file`` and ``edit_workspace_file`` are sensitive (:data:`SENSITIVE_TOOLS`): the
chatbot graph pauses them for human approval. ``remember_memory`` is not on that list. When they
touch ``agents/MEMORY.md`` they go through :meth:`MemoryService.write_memory_file`, the writer that
takes the same per-uid lock and publish as ``remember_memory``, so no update is lost. Tools built
with ``allow_memory_file=False`` (memory off, SubAgents) refuse MEMORY.md altogether, so the
memory switch and the SubAgent boundary cannot be bypassed through a generic file tool.
"""

from __future__ import annotations

import logging
from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.tools import BaseTool, StructuredTool

from yuxi.agents._common import compact_json, cut_to_char_boundary, error_result
from yuxi.agents._ports import MemoryPort
from yuxi.agents.context import RunIdentity, trusted_context
from yuxi.errors import YuxiError
from yuxi.workspace.filesystem import MEMORY_PATH, Workspace, split_relative_path

__all__ = [
    "EDIT_MAX_BYTES",
    "READ_MAX_BYTES",
    "SENSITIVE_TOOLS",
    "WRITE_MAX_BYTES",
    "make_read_workspace_tool",
    "make_workspace_tools",
]

_log = logging.getLogger(__name__)

#: Tools that pause for human approval (LangChain human-in-the-loop middleware).
SENSITIVE_TOOLS = ("write_workspace_file", "edit_workspace_file")

READ_MAX_BYTES = 64 * 1024
WRITE_MAX_BYTES = 1024 * 1024
EDIT_MAX_BYTES = 1024 * 1024

_UNAUTHORIZED = "this call has no trusted run identity for this workspace"
_MEMORY_REFUSED = (
    "agents/MEMORY.md is not available to this agent (memory is off, or this is a SubAgent)"
)


def _normalize_path(path: object) -> str:
    """Validated workspace-relative path; one leading ``/`` (workspace root) is accepted."""
    if isinstance(path, str) and path.startswith("/") and not path.startswith("//"):
        path = path[1:]
    return "/".join(split_relative_path(path))


def _error_for(exc: YuxiError) -> str:
    return error_result(exc.code, exc.message)


class _Bound:
    """What every tool closure shares: the workspace, its owner check, the memory writer."""

    def __init__(
        self, workspace: Workspace, memory: MemoryPort | None, *, allow_memory_file: bool
    ) -> None:
        self.workspace = workspace
        self.memory = memory
        self.allow_memory_file = allow_memory_file and memory is not None

    def identity(self, runtime: object) -> RunIdentity | None:
        context = trusted_context(getattr(runtime, "context", None), require_worker=False)
        if context is None or context.uid != self.workspace.uid:
            return None
        return context

    def resolve(self, path: object) -> tuple[str, bool]:
        """``(normalized path, is MEMORY.md)``; raises ``UnsafePath`` or refuses MEMORY.md."""
        normalized = _normalize_path(path)
        is_memory = normalized == MEMORY_PATH
        if is_memory and not self.allow_memory_file:
            raise _MemoryRefused
        return normalized, is_memory


class _MemoryRefused(Exception):
    pass


def _decode(data: bytes, path: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise _NotText(f"{path} is not UTF-8 text") from None


class _NotText(Exception):
    pass


def _read_tool(bound: _Bound) -> BaseTool:
    async def read_workspace_file(
        path: str, *, runtime: ToolRuntime[RunIdentity | None, Any]
    ) -> str:
        if bound.identity(runtime) is None:
            return error_result("unauthorized_run", _UNAUTHORIZED)
        try:
            normalized, _ = bound.resolve(path)
            data, truncated = await bound.workspace.read_authorized_file_prefix(
                normalized, READ_MAX_BYTES
            )
            if truncated:
                data = cut_to_char_boundary(data)
            text = _decode(data, normalized)
        except _MemoryRefused:
            return error_result("forbidden_path", _MEMORY_REFUSED)
        except _NotText as exc:
            return error_result("not_text", str(exc))
        except YuxiError as exc:
            return _error_for(exc)
        except OSError as exc:
            _log.warning("read_workspace_file failed: %r", exc)
            return error_result("storage_unavailable", "the workspace is not readable right now")
        result: dict[str, Any] = {
            "status": "ok",
            "path": normalized,
            "content": text,
            "size": len(data),
        }
        if truncated:
            result["truncated"] = True
        return compact_json(result)

    return StructuredTool.from_function(
        coroutine=read_workspace_file,
        name="read_workspace_file",
        description=(
            "Read a UTF-8 text file of the user's workspace. `path` is relative to the "
            "workspace (for example `notes/todo.md`); at most 64 KiB are returned."
        ),
    )


async def _write(bound: _Bound, uid: str, path: str, is_memory: bool, data: bytes) -> None:
    if is_memory:
        assert bound.memory is not None  # allow_memory_file implies a memory writer
        await bound.memory.write_memory_file(uid, data)
    else:
        await bound.workspace.write_file(path, data)


def _write_tool(bound: _Bound) -> BaseTool:
    async def write_workspace_file(
        path: str, content: str, *, runtime: ToolRuntime[RunIdentity | None, Any]
    ) -> str:
        identity = bound.identity(runtime)
        if identity is None:
            return error_result("unauthorized_run", _UNAUTHORIZED)
        try:
            normalized, is_memory = bound.resolve(path)
            data = content.encode("utf-8")
            if len(data) > WRITE_MAX_BYTES:
                return error_result(
                    "file_too_large", f"content is larger than {WRITE_MAX_BYTES} bytes"
                )
            await _write(bound, identity.uid, normalized, is_memory, data)
        except _MemoryRefused:
            return error_result("forbidden_path", _MEMORY_REFUSED)
        except UnicodeEncodeError:
            return error_result("invalid_argument", "content is not valid Unicode")
        except YuxiError as exc:
            return _error_for(exc)
        except Exception as exc:  # storage: never crash the run
            _log.warning("write_workspace_file failed: %r", exc)
            return error_result("storage_unavailable", "the file was not written; try again")
        return compact_json({"status": "written", "path": normalized, "size": len(data)})

    return StructuredTool.from_function(
        coroutine=write_workspace_file,
        name="write_workspace_file",
        description=(
            "Create or replace a text file of the user's workspace with `content`. `path` is "
            "relative to the workspace. Needs the user's approval before it runs."
        ),
    )


def _edit_tool(bound: _Bound) -> BaseTool:
    async def edit_workspace_file(
        path: str, old: str, new: str, *, runtime: ToolRuntime[RunIdentity | None, Any]
    ) -> str:
        identity = bound.identity(runtime)
        if identity is None:
            return error_result("unauthorized_run", _UNAUTHORIZED)
        if not old:
            return error_result("invalid_argument", "`old` must not be empty")
        try:
            normalized, is_memory = bound.resolve(path)
            etag: str | None = None
            if is_memory:
                assert bound.memory is not None
                raw, etag = await bound.memory.read_memory_file(identity.uid)
            else:
                raw = await bound.workspace.read_file(normalized, EDIT_MAX_BYTES)
            text = _decode(raw, normalized)
            count = text.count(old)
            if count != 1:
                return error_result(
                    "edit_conflict",
                    f"`old` occurs {count} times in {normalized}; it must occur exactly once",
                )
            data = text.replace(old, new, 1).encode("utf-8")
            if len(data) > EDIT_MAX_BYTES:
                return error_result(
                    "file_too_large", f"the edited file would exceed {EDIT_MAX_BYTES} bytes"
                )
            if is_memory:
                assert bound.memory is not None
                # If-Match on the version just read: a concurrent remember_memory is never lost.
                await bound.memory.write_memory_file(identity.uid, data, if_match=etag)
            else:
                await bound.workspace.write_file(normalized, data)
        except _MemoryRefused:
            return error_result("forbidden_path", _MEMORY_REFUSED)
        except _NotText as exc:
            return error_result("not_text", str(exc))
        except UnicodeEncodeError:
            return error_result("invalid_argument", "`new` is not valid Unicode")
        except YuxiError as exc:
            return _error_for(exc)
        except Exception as exc:
            _log.warning("edit_workspace_file failed: %r", exc)
            return error_result("storage_unavailable", "the file was not edited; try again")
        return compact_json({"status": "edited", "path": normalized, "size": len(data)})

    return StructuredTool.from_function(
        coroutine=edit_workspace_file,
        name="edit_workspace_file",
        description=(
            "Replace the one occurrence of the exact text `old` with `new` in a text file of "
            "the user's workspace. Needs the user's approval before it runs."
        ),
    )


def make_workspace_tools(
    *, workspace: Workspace, memory: MemoryPort, allow_memory_file: bool = True
) -> list[BaseTool]:
    """``read_workspace_file``, ``write_workspace_file``, ``edit_workspace_file`` for one user."""
    bound = _Bound(workspace, memory, allow_memory_file=allow_memory_file)
    return [_read_tool(bound), _write_tool(bound), _edit_tool(bound)]


def make_read_workspace_tool(*, workspace: Workspace) -> BaseTool:
    """Read-only ``read_workspace_file`` that refuses MEMORY.md (for SubAgents)."""
    return _read_tool(_Bound(workspace, None, allow_memory_file=False))
