"""A user's whole account: export it (one zip, streamed) and delete it (everything, provably).

Deleting runs in three steps, each its own transaction:

1. **stop**: under the user's locks, revoke every token (open event streams re-check their token
   on the revocation notification and end; no new request authenticates) and cancel the user's
   runs (pending ones at once, running ones told through their worker's cancel notification);
2. **settle**: wait until none of the user's runs is still running under a live lease (at most
   one lease length: a dead worker's lease runs out by then);
3. **delete**: under the user's memory lock and ``FOR UPDATE`` of the user's row, delete the
   LangGraph checkpoints of the user's threads and every row of the user, then, holding the
   workspace lock, the workspace directory and its lock file; commit.

Safe against a run that is mid-write: a memory write passes the gate (memory lock, run row
``FOR UPDATE``) and a file or event write holds the run's live lease ``FOR SHARE``, so each
either lands before step 3's locks and is deleted with the rest, or runs after it and finds no
run (refused: it never writes again). A checkpoint a run still wrote after step 3 (a worker that
ignored the cancel past the settle bound) is swept once more after the commit.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any

from yuxi.errors import FileTooLarge, InvalidArgument, NotFound, WorkspaceFileNotFound
from yuxi.limits import ACCOUNT_EXPORT_FILE_MAX_BYTES, ACCOUNT_EXPORT_PAGE_ROWS
from yuxi.services.accounts._export import (
    ACCOUNT_EXPORT_FORMAT,
    ACCOUNT_EXPORT_VERSION,
    ExportWriter,
    json_document,
    json_line,
    message_record,
    run_record,
    thread_record,
)
from yuxi.services.memory import MemoryVersionService, encode_export
from yuxi.services.unit_of_work import UnitOfWorkFactory
from yuxi.workspace.filesystem import MEMORY_PATH, Workspace
from yuxi.workspace.removal import remove_workspace_sync

__all__ = ["AccountExport", "AccountService", "DeletedAccount"]

#: How often step 2 looks again whether the user's runs have stopped.
_SETTLE_POLL_SECONDS = 0.1


@dataclass(frozen=True)
class DeletedAccount:
    """What a deletion removed: rows per table (checkpoint tables included), files, and the
    runs it had to stop and the tokens it revoked first."""

    uid: str
    rows: dict[str, int]
    files: int
    runs_stopped: int
    tokens_revoked: int
    #: Runs still running when the settle bound ran out (their writes are refused anyway).
    runs_unsettled: int = 0


@dataclass
class AccountExport:
    """What an export wrote: its zip entries and counts."""

    uid: str
    entries: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    skipped_files: list[str] = field(default_factory=list)


class AccountService:
    def __init__(
        self,
        uow: UnitOfWorkFactory,
        workspaces: Callable[[str], Workspace],
        memory_versions: MemoryVersionService,
        *,
        settle_seconds: float,
    ) -> None:
        self._uow = uow
        self._workspaces = workspaces
        self._memory_versions = memory_versions
        self._settle_seconds = settle_seconds

    # -- deletion ---------------------------------------------------------------------------------

    async def delete_account(self, uid: str, *, confirm: str | None = None) -> DeletedAccount:
        """Delete the user and everything they own (see the module docstring). With ``confirm``
        (the HTTP API), it must be the user's name exactly, or nothing happens."""
        async with self._uow() as uow:
            user = await uow.accounts.lock_user(uid)
            if user is None:
                raise NotFound("user not found")
            if confirm is not None and confirm != user.name:
                raise InvalidArgument("confirm must be the account's name; nothing was deleted")
            tokens = await uow.accounts.revoke_tokens(uid)
            running = await uow.accounts.stop_runs(uid)
            await uow.commit()
        unsettled = await self._settle(uid) if running else 0
        workspace = self._workspaces(uid)
        async with self._uow() as uow:
            if await uow.accounts.lock_user(uid) is None:
                raise NotFound("user not found")  # deleted meanwhile by another call
            thread_ids = await uow.accounts.thread_ids(uid)
            rows = await uow.accounts.delete_checkpoints(thread_ids)
            rows.update(await uow.accounts.delete_rows(uid))
            async with workspace.locked():
                files = await asyncio.to_thread(remove_workspace_sync, workspace)
                # Committed while the lock is held: a file write waiting for it then finds the
                # user gone (WorkspaceFileService checks under the lock) and writes nothing.
                await uow.commit()
        async with self._uow() as uow:  # a checkpoint written past the settle bound
            late = await uow.accounts.delete_checkpoints(thread_ids)
            await uow.commit()
        for table, count in late.items():
            rows[table] += count
        return DeletedAccount(uid, rows, files, len(running), tokens, unsettled)

    async def _settle(self, uid: str) -> int:
        """Wait until none of the user's runs runs under a live lease; how many still do when
        the bound runs out."""
        deadline = time.monotonic() + self._settle_seconds
        while True:
            async with self._uow() as uow:
                live = await uow.accounts.live_runs(uid)
            if live == 0 or time.monotonic() >= deadline:
                return live
            await asyncio.sleep(_SETTLE_POLL_SECONDS)

    # -- export -----------------------------------------------------------------------------------

    async def export_account(self, uid: str, out: IO[bytes]) -> AccountExport:
        """Write the user's account as a zip to ``out``; see docs/design.md for the entries."""
        async with self._uow() as uow:
            user = await uow.users.get(uid)
            if user is None:
                raise NotFound("user not found")
            memory_enabled = await uow.users.memory_enabled(uid)
        result = AccountExport(uid)
        writer = ExportWriter(out)
        try:
            await self._export_memory(uid, writer, result)
            await self._export_threads(uid, writer, result)
            await self._export_runs(uid, writer, result)
            await self._export_files(uid, writer, result)
            manifest = {
                "format": ACCOUNT_EXPORT_FORMAT,
                "version": ACCOUNT_EXPORT_VERSION,
                "exported_at": datetime.now(UTC),
                "user": {"uid": user.uid, "name": user.name, "created_at": user.created_at},
                "memory_enabled": memory_enabled,
                "counts": result.counts,
                "skipped_files": result.skipped_files,
                "entries": [*writer.entries, "account.json"],
            }
            await writer.entry("account.json", json_document(manifest))
        finally:
            await writer.close()
        result.entries = writer.entries
        return result

    async def _export_memory(self, uid: str, writer: ExportWriter, result: AccountExport) -> None:
        """MEMORY.md itself, and the memory export document (``GET /api/v1/memory/export``:
        the content, every retained version with its provenance, diff and content, the lint);
        both are bounded by the memory limits."""
        try:
            data = await self._workspaces(uid).read_file(MEMORY_PATH, ACCOUNT_EXPORT_FILE_MAX_BYTES)
        except WorkspaceFileNotFound:
            data = b""
        await writer.entry("memory/MEMORY.md", data)
        document = await self._memory_versions.export(uid)
        await writer.entry("memory/export.json", encode_export(document, indent=2))
        result.counts["memory_versions"] = len(document.versions)

    async def _export_threads(self, uid: str, writer: ExportWriter, result: AccountExport) -> None:
        """One ``threads/<thread_id>.jsonl`` per thread: the thread, then its messages with
        their tool calls, oldest first, read a page at a time."""
        threads = messages = calls = 0
        after_thread = 0
        while True:
            async with self._uow() as uow:
                page = await uow.accounts.threads_page(uid, after_thread, ACCOUNT_EXPORT_PAGE_ROWS)
            if not page:
                break
            after_thread = page[-1].id
            for conversation in page:
                threads += 1
                await writer.open_entry(f"threads/{conversation.thread_id}.jsonl")
                await writer.write([json_line(thread_record(conversation))])
                after_message = 0
                while True:
                    async with self._uow() as uow:
                        rows, tool_calls = await uow.accounts.messages_page(
                            conversation.id, after_message, ACCOUNT_EXPORT_PAGE_ROWS
                        )
                    if not rows:
                        break
                    after_message = rows[-1].id
                    messages += len(rows)
                    calls += sum(len(c) for c in tool_calls.values())
                    await writer.write(
                        [json_line(message_record(m, tool_calls.get(m.id, ()))) for m in rows]
                    )
        result.counts.update(threads=threads, messages=messages, tool_calls=calls)

    async def _export_runs(self, uid: str, writer: ExportWriter, result: AccountExport) -> None:
        """``runs.jsonl``: every run with its status, error, output and token usage."""
        await writer.open_entry("runs.jsonl")
        count = 0
        after: tuple[Any, str] | None = None
        while True:
            async with self._uow() as uow:
                page = await uow.accounts.runs_page(uid, after, ACCOUNT_EXPORT_PAGE_ROWS)
            if not page:
                break
            after = (page[-1].created_at, page[-1].id)
            count += len(page)
            await writer.write([json_line(run_record(run)) for run in page])
        result.counts["runs"] = count

    async def _export_files(self, uid: str, writer: ExportWriter, result: AccountExport) -> None:
        """Every regular file of the workspace under ``workspace/`` (one file in memory at a
        time); one larger than ``ACCOUNT_EXPORT_FILE_MAX_BYTES`` is named in the manifest."""
        workspace = self._workspaces(uid)
        count = 0
        for entry in await workspace.list_files(recursive=True):
            if entry.is_dir:
                continue
            if entry.size > ACCOUNT_EXPORT_FILE_MAX_BYTES:
                result.skipped_files.append(entry.path)
                continue
            try:
                data = await workspace.read_file(entry.path, ACCOUNT_EXPORT_FILE_MAX_BYTES)
            except WorkspaceFileNotFound:
                continue  # removed meanwhile
            except FileTooLarge:
                result.skipped_files.append(entry.path)  # grew meanwhile
                continue
            await writer.entry(f"workspace/{entry.path}", data)
            count += 1
        result.counts["files"] = count
