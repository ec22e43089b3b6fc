"""What the owner of a memory can see and do with its history: the entry view with each
entry's source and lint, the versions with their diffs, restore and undo.

Everything here is the owner's: it is scoped to one uid (another user's ``version_id`` is
:class:`~yuxi.errors.NotFound`, exactly like a missing one), it works whether memory is on or
off (the owner can always see and clean their memory; the switch is never read to allow or
refuse anything here), and a restore or an undo is published through the one locked write path
(:mod:`yuxi.services.memory._writer`), recorded as a ``user`` version like any other change.

* **restore** makes a retained version's content current; it must name the file it replaces
  (``If-Match``: missing → :class:`~yuxi.errors.PreconditionRequired`, stale →
  :class:`~yuxi.errors.PreconditionFailed`).
* **undo** reverts exactly one change: only while the file still is that version's result
  (sha256), back to the content before it (the previous retained version's, or the empty file
  when the change was the first ever). Otherwise :class:`~yuxi.errors.MemoryConflict` with the
  unified diff from that result to the current file — never a silent overwrite.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence

from yuxi.db.models import MemoryVersion
from yuxi.errors import (
    MemoryConflict,
    NotFound,
    PreconditionFailed,
    PreconditionRequired,
    WorkspaceFileNotFound,
)
from yuxi.limits import MEMORY_FILE_MAX_BYTES, MEMORY_PROMPT_MAX_BYTES
from yuxi.services.memory._entries import MemoryEntry, split_entries
from yuxi.services.memory._import_modes import check_import_mode
from yuxi.services.memory._lint import LintFinding, lint_memory
from yuxi.services.memory._provenance import entry_sources, unified_diff
from yuxi.services.memory._transfer import (
    MemoryExport,
    MemoryImportPreview,
    MemoryImportResult,
    MemoryTransfer,
    parse_import,
)
from yuxi.services.memory._versions import EMPTY_SHA256
from yuxi.services.memory._writer import LockedMemory, MemoryWriteAccess
from yuxi.services.memory.views import (
    LintFindingView,
    MemoryChangeView,
    MemoryEntryView,
    MemoryVersionDetail,
    MemoryVersionList,
    MemoryView,
    entry_source,
    version_view,
)
from yuxi.services.unit_of_work import UnitOfWork, UnitOfWorkFactory
from yuxi.workspace.filesystem import MEMORY_PATH, Workspace, etag_for, if_match_allows

__all__ = ["MemoryVersionService"]

_NOT_FOUND = "memory version not found"
_LABEL = "MEMORY.md"


def _thread_ids(rows: Iterable[MemoryVersion | None]) -> set[str]:
    return {row.thread_id for row in rows if row is not None and row.thread_id is not None}


class MemoryVersionService:
    def __init__(
        self,
        uow: UnitOfWorkFactory,
        workspace_factory: Callable[[str], Workspace],
    ) -> None:
        self._uow = uow
        self._workspace = workspace_factory
        self._lock = MemoryWriteAccess(uow, workspace_factory)
        self._transfer = MemoryTransfer(uow, workspace_factory)

    # -- reading ------------------------------------------------------------------------------

    async def view(self, uid: str) -> MemoryView:
        """MEMORY.md as entries, each with its source version, plus the lint findings."""
        try:
            data = await self._workspace(uid).read_file(MEMORY_PATH, MEMORY_FILE_MAX_BYTES)
        except WorkspaceFileNotFound:
            data = b""
        async with self._uow() as uow:
            enabled = await uow.users.memory_enabled(uid)
            versions = await uow.memory_versions.list_newest_first(uid)
            # Splitting up to 100 versions of up to 128 KiB, and the lint, are CPU work: off
            # the event loop.
            entries, sources, findings = await asyncio.to_thread(_analyse, data, versions)
            titles = await uow.memory_versions.thread_titles(uid, _thread_ids(sources))
        return MemoryView(
            etag=etag_for(data),
            size=len(data),
            file_limit_bytes=MEMORY_FILE_MAX_BYTES,
            prompt_window_bytes=MEMORY_PROMPT_MAX_BYTES,
            enabled=enabled,
            entries=[
                MemoryEntryView(
                    index=entry.index,
                    text=entry.text,
                    start_line=entry.start_line,
                    end_line=entry.end_line,
                    bytes=entry.bytes,
                    in_prompt_window=entry.in_prompt_window,
                    source=None if source is None else entry_source(source, titles),
                )
                for entry, source in zip(entries, sources, strict=True)
            ],
            lint=[LintFindingView(f.code, f.entry_index, f.message) for f in findings],
        )

    async def list_versions(self, uid: str) -> MemoryVersionList:
        async with self._uow() as uow:
            rows = await uow.memory_versions.list_newest_first(uid)
            titles = await uow.memory_versions.thread_titles(uid, _thread_ids(rows))
        return MemoryVersionList([version_view(row, titles) for row in rows])

    async def get_version(self, uid: str, version_id: str) -> MemoryVersionDetail:
        """The version, its content and its diff against the previous retained version."""
        async with self._uow() as uow:
            row = await self._owned(uow, uid, version_id)
            previous = await uow.memory_versions.previous(row)
            titles = await uow.memory_versions.thread_titles(uid, _thread_ids([row]))
        before = "" if previous is None else previous.content
        view = version_view(row, titles)
        return MemoryVersionDetail(
            **vars(view),
            content=row.content,
            diff=unified_diff(
                before,
                row.content,
                before_label=f"{_LABEL}@{previous.version_id if previous else 'empty'}",
                after_label=f"{_LABEL}@{row.version_id}",
            ),
        )

    # -- changing -----------------------------------------------------------------------------

    async def restore(self, uid: str, version_id: str, *, if_match: str | None) -> MemoryChangeView:
        """Make a retained version's content current, as a new ``restore`` version."""
        if if_match is None or not if_match.strip():
            raise PreconditionRequired(
                "restoring memory needs If-Match with the current ETag of MEMORY.md"
            )
        async with self._lock.for_user(uid) as locked:
            target = await self._owned(locked.uow, uid, version_id)
            if not if_match_allows(if_match, locked.current.etag):
                raise PreconditionFailed(
                    "MEMORY.md changed since you loaded it; reload before restoring"
                )
            result = await self._publish(locked, target.content, "restore", target)
        return result

    async def undo(self, uid: str, version_id: str) -> MemoryChangeView:
        """Revert exactly the change ``version_id`` made, as a new ``undo`` version."""
        async with self._lock.for_user(uid) as locked:
            target = await self._owned(locked.uow, uid, version_id)
            if locked.current.sha256 != target.sha256 or locked.current.truncated:
                raise MemoryConflict(
                    "memory has changed since this change; it can no longer be undone by itself "
                    "(see the diff from its result to the current file)",
                    details={
                        "diff": unified_diff(
                            target.content,
                            locked.current.recordable_text(),
                            before_label=f"{_LABEL}@{target.version_id}",
                            after_label=f"{_LABEL}@current",
                        )
                    },
                )
            previous = await locked.uow.memory_versions.previous(target)
            if previous is not None and previous.sha256 == target.parent_sha256:
                before = previous.content
            elif target.parent_sha256 == EMPTY_SHA256:
                before = ""
            else:
                raise MemoryConflict(
                    "the memory before this change is no longer kept (only the newest versions "
                    "are retained), so this change cannot be undone; restore a version instead"
                )
            result = await self._publish(locked, before, "undo", target)
        return result

    # -- leaving and arriving (docs/design.md §10.5) -------------------------------------------

    async def export(self, uid: str) -> MemoryExport:
        """The export document: the file, its ETag, every retained version, the lint."""
        return await self._transfer.export(uid)

    async def export_markdown(self, uid: str) -> tuple[bytes, str]:
        """MEMORY.md itself and its ETag."""
        return await self._transfer.read(uid)

    async def import_memory(
        self,
        uid: str,
        body: bytes,
        media_type: str | None,
        *,
        dry_run: bool,
        if_match: str | None,
        mode: object = "replace",
    ) -> MemoryImportPreview | MemoryImportResult:
        """Import Markdown or an export document as untrusted input: checked before anything
        is locked; a dry run writes nothing; an apply needs ``If-Match`` and records one
        ``user`` / ``import`` version. ``mode``: ``replace`` the file, or ``append`` the
        imported entries it does not have yet."""
        how = check_import_mode(mode)
        data = await asyncio.to_thread(parse_import, body, media_type)
        if dry_run:
            return await self._transfer.preview(uid, data, mode=how)
        return await self._transfer.apply(uid, data, if_match=if_match, mode=how)

    @staticmethod
    async def _owned(uow: UnitOfWork, uid: str, version_id: str) -> MemoryVersion:
        row = await uow.memory_versions.get(uid, version_id)
        if row is None:
            raise NotFound(_NOT_FOUND)
        return row

    @staticmethod
    async def _publish(
        locked: LockedMemory, content: str, kind: str, target: MemoryVersion
    ) -> MemoryChangeView:
        data = content.encode("utf-8")
        version = await locked.publish(
            data, actor="user", kind=kind, target_version_id=target.version_id
        )
        return MemoryChangeView(version_view(version, {}), etag_for(data))


def _analyse(
    data: bytes, versions: Sequence[MemoryVersion]
) -> tuple[list[MemoryEntry], list[MemoryVersion | None], list[LintFinding]]:
    """The entries of the file, the version that last changed each, and the lint findings."""
    entries = split_entries(data.decode("utf-8", errors="replace"))
    return entries, entry_sources(entries, versions), lint_memory(entries)
