"""User-level long-term memory: the read side, the one write tool, user edits.

Owner of ``load_memory_prompt`` and ``remember_memory`` (DESIGN.md §2); the history tools are
:mod:`yuxi.services.lookback_service`. Every public coroutine of :class:`MemoryService` that a
tool calls returns a structured result and never raises for an expected failure: the model is
told, the run goes on, and the file is untouched.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from yuxi.errors import (
    InvalidArgument,
    PreconditionFailed,
    WorkspaceError,
    WorkspaceFileNotFound,
)
from yuxi.repositories.agent_run_repository import AgentRunRepository
from yuxi.repositories.user_repository import UserRepository
from yuxi.services._memory_lock import memory_file_lock
from yuxi.services._memory_text import (
    CONTENT_MAX_BYTES,
    MEMORY_FILE_MAX_BYTES,
    REPLACES_MAX_BYTES,
    MemoryEdit,
    MemoryEditError,
    apply_add,
    apply_replace,
    check_text_argument,
    decode_memory_file,
    encode_result,
)
from yuxi.services._tool_args import tool_error
from yuxi.utils.string_utils import is_valid_text
from yuxi.workspace.filesystem import Workspace, etag_for

_log = logging.getLogger(__name__)

MEMORY_PATH = Workspace.MEMORY_PATH
MEMORY_DISPLAY_PATH = "/" + MEMORY_PATH
PROMPT_MAX_BYTES = 24 * 1024
PROMPT_TRUNCATION_NOTE = "\n…[memory truncated: only the first 24 KiB of MEMORY.md is shown]"
IDENTITY_FIELDS = ("uid", "thread_id", "run_id", "request_id", "worker_id")


@dataclass(frozen=True)
class MemorySnapshot:
    """The memory text injected into one run, and its fingerprint (recorded on the run)."""

    text: str
    sha256: str
    size: int
    truncated: bool


def _cut_to_char_boundary(data: bytes) -> bytes:
    """Drop a trailing partial UTF-8 sequence left by a byte-budget read."""
    end = len(data)
    i = end - 1
    while i >= 0 and end - i <= 4 and (data[i] & 0xC0) == 0x80:
        i -= 1
    if i < 0:
        return data
    lead = data[i]
    need = 1 if lead < 0x80 else 2 if lead >> 5 == 0b110 else 3 if lead >> 4 == 0b1110 else 4
    return data if end - i >= need else data[:i]


class MemoryService:
    def __init__(
        self,
        session_factory: async_sessionmaker[AsyncSession],
        workspace_root: Path,
        workspace_factory: Callable[[str], Workspace] | None = None,
    ) -> None:
        self._sessions = session_factory
        self._root = workspace_root
        self._workspace = workspace_factory or (lambda uid: Workspace(workspace_root, uid))

    # -- read side ----------------------------------------------------------------------------

    async def memory_enabled(self, uid: str) -> bool:
        async with self._sessions() as session:
            return await UserRepository(session).memory_enabled(uid)

    async def load_memory_snapshot(self, uid: str) -> MemorySnapshot | None:
        """``None`` when the switch is off — and then MEMORY.md is not even opened."""
        if not await self.memory_enabled(uid):
            return None
        return await self.read_memory_snapshot(uid)

    async def read_memory_snapshot(self, uid: str) -> MemorySnapshot:
        """The ≤ 24 KiB memory text (no switch check: callers have made it)."""
        try:
            data, truncated = await self._workspace(uid).read_authorized_file_prefix(
                MEMORY_PATH, PROMPT_MAX_BYTES
            )
        except WorkspaceFileNotFound:
            data, truncated = b"", False
        except WorkspaceError as exc:
            _log.warning("memory of %s not readable: %s", uid, exc)
            data, truncated = b"", False
        if truncated:
            data = _cut_to_char_boundary(data)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            # Fail closed: never inject mangled bytes; remember_memory reports the encoding.
            _log.warning("memory of %s is not valid UTF-8; not injected", uid)
            text, truncated = "", False
        if not text.strip():
            text, truncated = "", False
        elif truncated:
            text += PROMPT_TRUNCATION_NOTE
        raw = text.encode("utf-8")
        return MemorySnapshot(text, hashlib.sha256(raw).hexdigest(), len(raw), truncated)

    async def load_memory_prompt(self, uid: str) -> str | None:
        snapshot = await self.load_memory_snapshot(uid)
        return None if snapshot is None else snapshot.text

    # -- the write tool -----------------------------------------------------------------------

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
    ) -> dict[str, Any]:
        identity = {
            "uid": uid,
            "thread_id": thread_id,
            "run_id": run_id,
            "request_id": request_id,
            "worker_id": worker_id,
        }
        missing = [
            k
            for k in IDENTITY_FIELDS
            if not isinstance(identity[k], str) or not identity[k] or not is_valid_text(identity[k])
        ]
        if missing:
            return tool_error(
                "unauthorized_run",
                f"no trusted run identity ({', '.join(missing)} missing or invalid)",
            )
        try:
            text = check_text_argument("content", content, CONTENT_MAX_BYTES)
            old = (
                None
                if replaces is None
                else check_text_argument("replaces", replaces, REPLACES_MAX_BYTES)
            )
        except MemoryEditError as exc:
            return tool_error(exc.code, exc.message)
        published: dict[str, Any] = {}
        try:
            return await self._locked_remember(identity, text, old, published)
        except MemoryEditError as exc:
            return tool_error(exc.code, exc.message)
        except (SQLAlchemyError, OSError, WorkspaceError, TimeoutError) as exc:
            _log.warning("remember_memory for %s failed: %r", uid, exc)
            if published:
                # The publish happened under both locks; only ending the (read-only)
                # transaction failed. The file did change: say so, truthfully.
                return published
            return tool_error(
                "storage_unavailable",
                "memory storage is unavailable right now; nothing was changed. Try again later.",
            )

    async def _locked_remember(
        self,
        identity: dict[str, str],
        content: str,
        replaces: str | None,
        published: dict[str, Any],
    ) -> dict[str, Any]:
        uid = identity["uid"]
        workspace = self._workspace(uid)
        async with self._sessions() as session, session.begin():
            auth = await AgentRunRepository(session).lock_memory_write(**identity)
            if not auth.ok:
                return tool_error(
                    "unauthorized_run", f"this run may not write memory: {auth.reason}"
                )
            # Re-read the switch under the lock: turning memory off mid-run wins.
            if not await UserRepository(session).memory_enabled(uid):
                return tool_error("memory_disabled", "memory is turned off for this user")
            async with memory_file_lock(self._root, workspace.directory.name):
                base = await self._read_current(workspace)
                edit: MemoryEdit = (
                    apply_add(base, content)
                    if replaces is None
                    else apply_replace(base, replaces, content)
                )
                data = edit.text.encode("utf-8")
                if edit.changed:
                    data = encode_result(edit.text)
                result = {
                    "status": "updated" if edit.changed else "unchanged",
                    "path": MEMORY_DISPLAY_PATH,
                    "size": len(data),
                    "start_line": edit.start_line,
                    "end_line": edit.end_line,
                }
                if edit.changed:
                    await workspace.replace_authorized_file(MEMORY_PATH, data)
                    published.update(result)
        return result

    async def _read_current(self, workspace: Workspace) -> str:
        try:
            data, truncated = await workspace.read_authorized_file_prefix(
                MEMORY_PATH, MEMORY_FILE_MAX_BYTES
            )
        except WorkspaceFileNotFound:
            return ""
        if truncated:
            raise MemoryEditError(
                "memory_too_large",
                f"MEMORY.md is larger than {MEMORY_FILE_MAX_BYTES} bytes; ask the user to tidy it "
                "in the workspace file editor",
            )
        return decode_memory_file(data)

    # -- user edits (file API, UI, generic file tools) ----------------------------------------

    async def read_memory_file(self, uid: str) -> tuple[bytes, str]:
        """Current bytes and strong ETag of MEMORY.md (missing reads as empty)."""
        try:
            data = await self._workspace(uid).read_file(MEMORY_PATH, MEMORY_FILE_MAX_BYTES)
        except WorkspaceFileNotFound:
            data = b""
        return data, etag_for(data)

    async def write_memory_file(self, uid: str, data: bytes, *, if_match: str | None = None) -> str:
        """Replace MEMORY.md with a user's edit under the same lock and publish as the tool.

        ``if_match`` (an ETag from :meth:`read_memory_file`; ``*`` matches anything) makes a
        stale edit fail with :class:`PreconditionFailed` instead of overwriting newer memory.
        Returns the new ETag. Raises :class:`InvalidArgument` for non-UTF-8 or oversize data.
        """
        if len(data) > MEMORY_FILE_MAX_BYTES:
            raise InvalidArgument(
                f"MEMORY.md may be at most {MEMORY_FILE_MAX_BYTES} bytes, got {len(data)}"
            )
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidArgument("MEMORY.md must be valid UTF-8") from None
        if b"\x00" in data:
            raise InvalidArgument("MEMORY.md must not contain NUL bytes")
        async with self._user_edit(uid, if_match) as workspace:
            await workspace.replace_authorized_file(MEMORY_PATH, data)
        return etag_for(data)

    async def delete_memory_file(self, uid: str, *, if_match: str | None = None) -> None:
        """Delete MEMORY.md under the same lock (a later remember_memory re-creates it)."""
        async with self._user_edit(uid, if_match) as workspace:
            with contextlib.suppress(WorkspaceFileNotFound):
                await workspace.delete_file(MEMORY_PATH)

    @asynccontextmanager
    async def _user_edit(self, uid: str, if_match: str | None) -> AsyncIterator[Workspace]:
        """Hold the per-uid advisory lock and file lock; check ``If-Match`` against the file."""
        workspace = self._workspace(uid)
        async with self._sessions() as session, session.begin():
            await AgentRunRepository(session).lock_user_memory(uid)
            async with memory_file_lock(self._root, workspace.directory.name):
                if if_match is not None and if_match.strip() != "*":
                    try:
                        current = await workspace.read_file(MEMORY_PATH, MEMORY_FILE_MAX_BYTES + 1)
                    except WorkspaceFileNotFound:
                        current = b""
                    if etag_for(current) not in _etag_list(if_match):
                        raise PreconditionFailed(
                            "MEMORY.md changed since you loaded it; reload and re-apply your edit"
                        )
                yield workspace


def _etag_list(header: str) -> set[str]:
    return {part.strip().removeprefix("W/") for part in header.split(",") if part.strip()}
