"""What one run brings to a compiled graph: the shared agent input context and the run context.

:func:`build_agent_input_context` (the run identity plus the user's AGENTS.md and USER.md) is
used by chat, resume, the agent-state view and SubAgents. It never reads ``agents/MEMORY.md``:
long-term memory reaches only the top-level chat agent, and only through
:mod:`yuxi.agents.middlewares.memory` (design.md §2, §4).

A graph is compiled once per configuration and shared by every run of that configuration, so
nothing of a run is bound into it. Everything a run is reaches the graph as LangGraph's run
context, one :class:`RunContext` per invocation (``context_schema``): tools read it from
``ToolRuntime.context``, middleware from ``request.runtime.context``. :func:`trusted_context`
is the one check all of them use (fail closed: anything else is no run at all).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from yuxi.errors import UnauthorizedRun, WorkspaceError, WorkspaceFileNotFound
from yuxi.identity import RunIdentity
from yuxi.limits import CONTEXT_FILE_MAX_BYTES
from yuxi.services.memory.service import MemorySnapshot
from yuxi.utils.string_utils import cut_to_char_boundary
from yuxi.workspace.filesystem import AGENTS_PATH, USER_PATH, Workspace

__all__ = [
    "CONTEXT_FILES",
    "CONTEXT_FILE_MAX_BYTES",
    "AgentInputContext",
    "ContextFile",
    "RunContext",
    "RunIdentity",
    "RunMemory",
    "RunSubagent",
    "SubagentReply",
    "build_agent_input_context",
    "trusted_context",
]

_log = logging.getLogger(__name__)

#: The files assembled into every agent's prompt, in order. MEMORY.md is deliberately absent.
CONTEXT_FILES: tuple[tuple[str, str], ...] = (
    (AGENTS_PATH, "Workspace instructions"),
    (USER_PATH, "About the user"),
)


@dataclass(frozen=True)
class SubagentReply:
    """A SubAgent's final answer, and the child thread it worked in (when persisted)."""

    reply: str
    thread_id: str | None = None

    def to_payload(self) -> dict[str, Any]:
        payload: dict[str, Any] = {"status": "ok"}
        if self.thread_id is not None:
            payload["thread_id"] = self.thread_id
        payload["reply"] = self.reply
        return payload


#: Runs a SubAgent for the run whose context carries it; returns its answer.
RunSubagent = Callable[[str], Awaitable[SubagentReply]]


@dataclass(frozen=True, slots=True)
class RunMemory:
    """The memory one run injects: the snapshot read (and recorded) as the run starts, and the
    block rendered from it with the run's own nonce (:func:`yuxi.agents.middlewares.memory.
    run_memory`)."""

    snapshot: MemorySnapshot
    nonce: str
    block: str


@dataclass(frozen=True, slots=True, eq=False)
class RunContext:
    """Everything of one run that a shared graph sees: the LangGraph run context.

    ``identity`` is the run's trusted identity, ``workspace`` the owner's workspace (it must be
    the identity's user: construction refuses anything else), ``system_prompt`` the shared
    context (:func:`build_agent_input_context`), ``memory`` what the memory middleware injects
    (``None``: memory is off for this run, or a SubAgent), ``subagents`` the runner the delegate
    tool calls (``None``: this run may not delegate).
    """

    identity: RunIdentity
    workspace: Workspace
    system_prompt: str
    memory: RunMemory | None = None
    subagents: RunSubagent | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.identity, RunIdentity):
            raise UnauthorizedRun("a run context needs a trusted run identity")
        if not isinstance(self.workspace, Workspace) or self.workspace.uid != self.identity.uid:
            raise UnauthorizedRun("the workspace does not belong to the run's user")


def trusted_context(context: object, *, require_worker: bool) -> RunContext | None:
    """The run context if ``context`` is a complete :class:`RunContext`, else ``None``.

    Complete: a :class:`RunIdentity` with every value set and a workspace of that same user.
    With ``require_worker`` a SubAgent context (``worker_id`` None) is refused as well.
    Callers turn ``None`` into a structured ``unauthorized_run`` error: fail closed.
    """
    if not isinstance(context, RunContext):
        return None
    identity = context.identity
    if not isinstance(identity, RunIdentity):
        return None
    values: list[object] = [identity.uid, identity.thread_id, identity.run_id, identity.request_id]
    if require_worker:
        values.append(identity.worker_id)
    if not all(isinstance(value, str) and value for value in values):
        return None
    workspace = context.workspace
    if not isinstance(workspace, Workspace) or workspace.uid != identity.uid:
        return None
    return context


@dataclass(frozen=True)
class ContextFile:
    """What one context file contributed to the prompt."""

    path: str
    size: int  # UTF-8 bytes put into the prompt, truncation marker included
    truncated: bool


@dataclass(frozen=True)
class AgentInputContext:
    system_prompt: str
    identity: RunIdentity
    files: tuple[ContextFile, ...]


def _truncation_marker(path: str) -> str:
    return f"\n…[truncated: only the first 64 KiB of {path} is shown]"


def _fit(data: bytes, truncated: bool, path: str) -> str | None:
    """Decode a bounded read; cut to the budget on a character boundary with a marker."""
    if truncated or len(data) > CONTEXT_FILE_MAX_BYTES:
        marker = _truncation_marker(path)
        budget = CONTEXT_FILE_MAX_BYTES - len(marker.encode("utf-8"))
        data = cut_to_char_boundary(data[:budget])
        try:
            return data.decode("utf-8") + marker
        except UnicodeDecodeError:
            return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _read_context_files_sync(
    workspace: Workspace, *, ensure_workspace: bool
) -> list[tuple[bytes, bool] | WorkspaceError]:
    """In one worker thread (one hop off the event loop, not one per file): the workspace made
    sure of when asked, then each context file's bounded prefix, or the error reading it."""
    if ensure_workspace:
        workspace.ensure_user_workspace_sync()
    reads: list[tuple[bytes, bool] | WorkspaceError] = []
    for path, _title in CONTEXT_FILES:
        try:
            reads.append(workspace.read_file_prefix_sync(path, CONTEXT_FILE_MAX_BYTES))
        except WorkspaceError as exc:
            reads.append(exc)
    return reads


def _context_text(
    workspace: Workspace, path: str, read: tuple[bytes, bool] | WorkspaceError
) -> tuple[str, bool] | None:
    if isinstance(read, WorkspaceFileNotFound):
        return None
    if isinstance(read, WorkspaceError):
        _log.warning("context file %s of %s not readable: %s", path, workspace.uid, read)
        return None
    data, truncated = read
    text = _fit(data, truncated, path)
    if text is None:
        _log.warning("context file %s of %s is not valid UTF-8; skipped", path, workspace.uid)
        return None
    if not text.strip():
        return None
    return text, truncated


async def build_agent_input_context(
    *,
    workspace: Workspace,
    identity: RunIdentity,
    base_prompt: str,
    ensure_workspace: bool = False,
) -> AgentInputContext:
    """System prompt = ``base_prompt`` + AGENTS.md + USER.md (each ≤ 64 KiB); never MEMORY.md.

    Missing, empty, unreadable (symlink, not a regular file) or non-UTF-8 files are skipped.
    With ``ensure_workspace``, the user's workspace is made sure of first, in the same hop off
    the event loop as the reads.
    """
    if workspace.uid != identity.uid:
        raise ValueError("the workspace does not belong to the run's user")
    reads = await asyncio.to_thread(
        _read_context_files_sync, workspace, ensure_workspace=ensure_workspace
    )
    parts = [base_prompt.rstrip()] if base_prompt.strip() else []
    files: list[ContextFile] = []
    for (path, title), raw in zip(CONTEXT_FILES, reads, strict=True):
        read = _context_text(workspace, path, raw)
        if read is None:
            continue
        text, truncated = read
        parts.append(f"## {title} ({path})\n\n{text.rstrip()}")
        files.append(ContextFile(path, len(text.encode("utf-8")), truncated))
    return AgentInputContext(
        system_prompt="\n\n".join(parts), identity=identity, files=tuple(files)
    )
