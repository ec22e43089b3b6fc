"""``yuxi backup``: one consistent archive of the database and every workspace, taken while the
server runs (design.md "Backup and restore").

How it stays consistent — a memory write is in the archive wholly (file and version) or not at
all:

1. **Copy, user by user, under the user's workspace lock.** Every MEMORY.md writer holds that
   lock from before it reads the file until after its transaction has committed (record the
   version, replace the file, commit; ``services/memory/_writer.py``). So while the backup holds
   it, the file and the committed versions agree, and the newest committed ``seq`` read then is
   the version the copied file belongs to. The user's other files are copied in the same hold:
   every writer of a workspace file takes the same lock, so no file is torn and each user's
   files are one instant of that user's workspace. MEMORY.md is kept aside (spooled); the rest
   go straight into the archive.
2. **Then one snapshot for the whole database**: a read-only repeatable-read transaction exports
   it, ``pg_dump --snapshot`` dumps exactly it, and the row counts and newest memory versions
   are read in it too.
3. **Reconcile each MEMORY.md with the snapshot.** A write that committed between the user's
   copy and the snapshot is in the dump but not in the copied file: the archive then takes the
   file from the snapshot's newest version (``content`` is the whole file after each version,
   checked against its ``sha256``). Otherwise the copied file is the file at the snapshot.

No writer is ever blocked for longer than one user's copy, and no lock is held across users.
What is *not* tied to the snapshot: workspace files other than MEMORY.md have no database record,
so an agent's file written after its user was copied is missing while its conversation is in
the dump (or a message of a run that wrote a file before the copy is not yet in it).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING

from yuxi import __version__
from yuxi.db.dump import ClientTools, find_client_tools, run_pg_dump
from yuxi.errors import BackupFailed, InvalidArgument, WorkspaceError
from yuxi.services.backup._archive import ArchiveWriter
from yuxi.services.backup._manifest import (
    DATABASE_MEMBER,
    ArchivedFile,
    Manifest,
    workspace_member,
)
from yuxi.services.unit_of_work import UnitOfWork, UnitOfWorkFactory
from yuxi.workspace.copying import open_workspace_file
from yuxi.workspace.filesystem import MEMORY_PATH, Workspace

if TYPE_CHECKING:
    from yuxi.repositories.backup_repository import MemoryHead

Progress = Callable[[str], None]


@dataclass(frozen=True)
class BackupResult:
    path: Path
    bytes: int
    users: int
    files: int
    tables: dict[str, int]
    #: Users whose MEMORY.md was taken from the snapshot (a write landed during the backup).
    memory_from_snapshot: int
    seconds: float


@dataclass
class _Copied:
    seq: int
    memory: Path | None  # the spooled MEMORY.md; None: the user has none


def _copy_user_sync(
    writer: ArchiveWriter, root: Path, uid: str, spool: Path, index: int
) -> tuple[Path | None, int]:
    """Every regular file of ``uid``'s workspace into the archive, MEMORY.md into the spool.
    Returns (spooled MEMORY.md or None, files archived). Runs under the user's lock."""
    workspace = Workspace(root, uid)
    memory: Path | None = None
    archived = 0
    for entry in workspace.list_files_sync("", recursive=True):
        if entry.is_dir:
            continue
        try:
            with open_workspace_file(root, uid, entry.path) as handle:
                if entry.path == MEMORY_PATH:
                    memory = spool / f"{index}.md"
                    memory.write_bytes(handle.read())
                    continue
                size = _size(handle)
                writer.add(
                    workspace_member(uid, entry.path), handle, size, uid=uid, path=entry.path
                )
                archived += 1
        except WorkspaceError:
            continue  # removed or swapped for something not a file since the listing
    return memory, archived


def _size(handle: IO[bytes]) -> int:
    return os.fstat(handle.fileno()).st_size


def _add_file(writer: ArchiveWriter, member: str, path: Path) -> ArchivedFile:
    with open(path, "rb") as handle:
        return writer.add(member, handle, _size(handle))


def _open_archive(out: Path) -> tuple[Path, Path, ArchiveWriter]:
    """The resolved target (refused if it exists), a spool directory beside it and the
    writer of ``<out>.partial``."""
    out = out.resolve()
    if out.exists():
        raise InvalidArgument(f"{out} exists: choose a new file name for the backup")
    if not out.parent.is_dir():
        raise InvalidArgument(f"{out.parent} is not a directory")
    spool = Path(tempfile.mkdtemp(prefix=".yuxi-backup-", dir=out.parent))
    return out, spool, ArchiveWriter(out)


class BackupService:
    def __init__(
        self,
        uow: UnitOfWorkFactory,
        workspace_root: Path,
        database_url: str,
        *,
        embedded: bool,
    ) -> None:
        self._uow = uow
        self._root = workspace_root
        self._url = database_url
        self._embedded = embedded

    async def client_tools(self, uow: UnitOfWork) -> tuple[ClientTools, tuple[int, str]]:
        version = await uow.backup.server_version()
        tools = await asyncio.to_thread(
            find_client_tools, version[0] // 10000, embedded=self._embedded
        )
        return tools, version

    async def create(self, out: Path, progress: Progress | None = None) -> BackupResult:
        """Write the archive to ``out`` (refused if it exists); nothing is left at ``out`` or
        beside it when this fails."""
        say = progress or (lambda _line: None)
        started = time.monotonic()
        async with self._uow() as uow:
            tools, _ = await self.client_tools(uow)
        out, spool, writer = await asyncio.to_thread(_open_archive, out)
        try:
            copied = await self._copy_workspaces(writer, spool, say)
            manifest, from_snapshot = await self._dump_and_reconcile(
                writer, tools, spool, copied, say
            )
            await asyncio.to_thread(writer.finish, manifest)
        except BaseException:
            await asyncio.to_thread(writer.abandon)
            raise
        finally:
            shutil.rmtree(spool, ignore_errors=True)
        size = await asyncio.to_thread(lambda: out.stat().st_size)
        say(f"backup written: {out} ({size / 1e6:.1f} MB)")
        return BackupResult(
            path=out,
            bytes=size,
            users=len(manifest.users),
            files=len(manifest.files) - 1,
            tables=manifest.tables,
            memory_from_snapshot=from_snapshot,
            seconds=time.monotonic() - started,
        )

    async def _copy_workspaces(
        self, writer: ArchiveWriter, spool: Path, say: Progress
    ) -> dict[str, _Copied]:
        copied: dict[str, _Copied] = {}
        files, last = 0, time.monotonic()
        async with self._uow() as uow:
            uids = await uow.backup.user_uids()
            say(f"copying the workspaces of {len(uids)} users")
            for index, uid in enumerate(uids):
                async with Workspace(self._root, uid).locked():
                    # Read under the lock: every MEMORY.md writer commits inside it, so this is
                    # the version the file about to be copied belongs to.
                    seq = await uow.backup.newest_memory_seq(uid)
                    memory, count = await asyncio.to_thread(
                        _copy_user_sync, writer, self._root, uid, spool, index
                    )
                copied[uid] = _Copied(seq, memory)
                files += count
                if time.monotonic() - last > 2:
                    last = time.monotonic()
                    say(
                        f"workspaces: {index + 1}/{len(uids)} users, {files} files, "
                        f"{writer.bytes / 1e6:.1f} MB"
                    )
        return copied

    async def _dump_and_reconcile(
        self,
        writer: ArchiveWriter,
        tools: ClientTools,
        spool: Path,
        copied: dict[str, _Copied],
        say: Progress,
    ) -> tuple[Manifest, int]:
        dump = spool / "database.pgdump"
        async with self._uow() as snap:
            snapshot = await snap.backup.export_snapshot()
            num, name = await snap.backup.server_version()
            say("dumping the database")
            task = asyncio.create_task(
                asyncio.to_thread(
                    run_pg_dump, tools, self._url, dump, snapshot=snapshot, progress=say
                )
            )
            try:
                # Read in the exported snapshot while pg_dump dumps it.
                uids = await snap.backup.user_uids()
                heads = await snap.backup.newest_memory_seqs()
                revision = await snap.backup.schema_revision()
                tables = await snap.backup.row_counts()
                newer: dict[str, MemoryHead] = {}
                for uid in uids:
                    seq = heads.get(uid, 0)
                    # Any other newest version than the copied file's (a later write; or, never
                    # in practice, a history rewritten since): the snapshot's file wins.
                    if seq > 0 and seq != (copied[uid].seq if uid in copied else 0):
                        head = await snap.backup.memory_head(uid)
                        if head is not None:
                            newer[uid] = head
            finally:
                # The transaction must outlive the dump: the snapshot dies with it.
                with contextlib.suppress(BaseException):
                    await asyncio.shield(task)
            await task
        entry = await asyncio.to_thread(_add_file, writer, DATABASE_MEMBER, dump)
        say(f"database dumped ({entry.size / 1e6:.1f} MB)")
        memory = await asyncio.to_thread(self._add_memory_files, writer, uids, copied, heads, newer)
        manifest = Manifest(
            yuxi_version=__version__,
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
            postgresql={
                "server_version": name,
                "server_version_num": num,
                "pg_dump": tools.version_line,
            },
            schema_revision=revision,
            tables=tables,
            users=uids,
            memory=memory,
        )
        return manifest, len(newer)

    def _add_memory_files(
        self,
        writer: ArchiveWriter,
        uids: list[str],
        copied: dict[str, _Copied],
        heads: dict[str, int],
        newer: dict[str, MemoryHead],
    ) -> dict[str, dict[str, object]]:
        memory: dict[str, dict[str, object]] = {}
        for uid in uids:
            member = workspace_member(uid, MEMORY_PATH)
            owner: dict[str, str | None] = {"uid": uid, "path": MEMORY_PATH}
            head = newer.get(uid)
            if head is not None:
                data = head.content.encode("utf-8")
                entry = writer.add_bytes(member, data, **owner)
                if entry.sha256 != head.sha256:
                    raise BackupFailed(
                        f"memory version {head.seq} of {uid!r} does not match its sha256"
                    )
                memory[uid] = {"seq": head.seq, "sha256": entry.sha256, "source": "version"}
                continue
            spooled = copied[uid].memory if uid in copied else None
            sha = None
            if spooled is not None:
                with open(spooled, "rb") as handle:
                    sha = writer.add(member, handle, spooled.stat().st_size, **owner).sha256
            memory[uid] = {"seq": heads.get(uid, 0), "sha256": sha, "source": "workspace"}
        return memory
