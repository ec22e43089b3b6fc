"""``yuxi restore``: an archive made by ``yuxi backup`` back into an empty database and data dir.

Order, so that a bad archive or a refused target changes nothing:

1. verify the whole archive against its manifest (format, schema revision known to this code,
   every member's size and sha256, nothing missing or extra) — nothing written yet;
2. refuse a target that holds data (a table in the database, a file or directory in the
   workspace root other than the lock directory) unless ``force``;
3. only then write: with ``force`` drop the database's schemas and move the old workspaces
   aside; extract the dump and the workspace files into a staging directory inside the data dir
   (every hash checked again); ``pg_restore`` in one transaction; compare every table's row count
   with the manifest; move the staged workspaces into place; migrate to this code's head.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from yuxi.db.dump import find_client_tools, run_pg_restore, schema_revision_is_known
from yuxi.db.migrate import upgrade
from yuxi.errors import ArchiveUnsupported, BackupFailed, RestoreTargetNotEmpty
from yuxi.services.backup._archive import extract_archive, verify_archive
from yuxi.services.backup._manifest import DATABASE_MEMBER, ArchivedFile, Manifest
from yuxi.services.unit_of_work import UnitOfWorkFactory
from yuxi.workspace.copying import write_new_workspace_file

Progress = Callable[[str], None]
#: Entries of the workspace root that hold no user data.
_NOT_DATA = {".locks"}


@dataclass(frozen=True)
class RestoreResult:
    users: int
    files: int
    tables: dict[str, int]
    seconds: float
    manifest: Manifest


def workspace_root_entries(root: Path) -> list[str]:
    """What a workspace root holds besides its lock directory (empty: nothing to lose)."""
    try:
        return sorted(name for name in os.listdir(root) if name not in _NOT_DATA)
    except FileNotFoundError:
        return []


class RestoreService:
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

    async def verify(self, archive: Path, progress: Progress | None = None) -> Manifest:
        """Check ``archive`` whole and that this code can restore it; writes nothing."""
        manifest = await asyncio.to_thread(verify_archive, archive, progress)
        if manifest.schema_revision is not None and not schema_revision_is_known(
            manifest.schema_revision
        ):
            raise ArchiveUnsupported(
                f"the archive's database is at schema revision {manifest.schema_revision!r}, "
                f"which this Yuxi does not know (made by Yuxi {manifest.yuxi_version}): restore "
                "it with that version or a newer one"
            )
        return manifest

    async def restore(
        self, archive: Path, *, force: bool = False, progress: Progress | None = None
    ) -> RestoreResult:
        say = progress or (lambda _line: None)
        started = time.monotonic()
        say(f"verifying {archive}")
        manifest = await self.verify(archive, say)
        async with self._uow() as uow:
            tables = await uow.backup.tables()
            version = await uow.backup.server_version()
        files = workspace_root_entries(self._root)
        if (tables or files) and not force:
            found = []
            if tables:
                found.append(f"{len(tables)} tables in the database (e.g. {tables[0]})")
            if files:
                found.append(f"{len(files)} entries in {self._root} (e.g. {files[0]})")
            raise RestoreTargetNotEmpty(
                "the restore target is not empty: "
                + "; ".join(found)
                + ". Restore into a new data dir and an empty database, or pass --force to "
                "replace everything there"
            )
        tools = await asyncio.to_thread(
            find_client_tools, version[0] // 10000, embedded=self._embedded
        )
        data_dir = self._root.parent
        data_dir.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".yuxi-restore-", dir=data_dir))
        try:
            say("extracting")
            await asyncio.to_thread(self._extract, archive, manifest, staging)
            if force:
                await self._clear_target(staging, say)
            say("restoring the database")
            await asyncio.to_thread(
                run_pg_restore, tools, self._url, staging / "database.pgdump", progress=say
            )
            async with self._uow() as uow:
                counts = await uow.backup.row_counts()
            if counts != manifest.tables:
                wrong = sorted(
                    k
                    for k in set(counts) | set(manifest.tables)
                    if counts.get(k) != manifest.tables.get(k)
                )
                raise BackupFailed(
                    f"restored row counts differ from the manifest: {wrong}; the database is "
                    "restored but the workspaces were not moved in (restore again with --force)"
                )
            self._root.mkdir(mode=0o700, parents=True, exist_ok=True)
            staged = staging / "workspaces"
            for name in sorted(os.listdir(staged)) if staged.is_dir() else []:
                os.rename(staged / name, self._root / name)
            say("migrating to this version's schema")
            await upgrade(self._url)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return RestoreResult(
            users=len(manifest.users),
            files=len(manifest.workspace_files()),
            tables=manifest.tables,
            seconds=time.monotonic() - started,
            manifest=manifest,
        )

    def _extract(self, archive: Path, manifest: Manifest, staging: Path) -> None:
        users = set(manifest.users)
        root = staging / "workspaces"

        def write(entry: ArchivedFile, source: IO[bytes]) -> None:
            if entry.member == DATABASE_MEMBER:
                with open(staging / "database.pgdump", "wb") as out:
                    shutil.copyfileobj(source, out, 1 << 20)
            elif entry.uid in users and entry.path is not None:
                # Files of a user deleted between the copy and the snapshot stay out.
                write_new_workspace_file(root, entry.uid, entry.path, source, entry.size)

        extract_archive(archive, manifest, write)
        os.sync()

    async def _clear_target(self, staging: Path, say: Progress) -> None:
        """``--force``: drop every schema of the database and move the old workspaces into the
        staging directory (removed with it at the end)."""
        say("--force: dropping the database's schemas and the old workspaces")
        async with self._uow() as uow:
            await uow.backup.drop_everything()
            await uow.commit()
        old = staging / "replaced"
        old.mkdir()
        for name in workspace_root_entries(self._root):
            os.rename(self._root / name, old / name)
