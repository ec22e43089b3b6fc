"""What the memory history service shows the owner: the entry view of MEMORY.md, its versions,
the result of a restore or an undo.

These frozen dataclasses are also the HTTP API's response bodies (FastAPI serialises them), so
each public shape is defined once, here. None of it is ever read into a prompt.

``thread_title`` and ``source_available`` resolve a version's provenance link now: the title of
the thread it names, and whether that thread is still there (a deleted thread keeps its
versions; its link is then "source no longer available": ``null`` / ``false``). A version that
names no thread (the owner's edits, recoveries) has neither.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from yuxi.db.models import MemoryVersion
from yuxi.repositories.memory.version_repository import NewVersion

__all__ = [
    "EntrySource",
    "LintFindingView",
    "MemoryChangeView",
    "MemoryEntryView",
    "MemoryVersionDetail",
    "MemoryVersionList",
    "MemoryVersionView",
    "MemoryView",
    "entry_source",
    "version_view",
]


@dataclass(frozen=True)
class MemoryVersionView:
    """One recorded change of MEMORY.md (``sha256`` and ``size`` of the result)."""

    version_id: str
    created_at: datetime
    actor: str
    kind: str
    run_id: str | None
    thread_id: str | None
    message_id: int | None
    tool_call_id: str | None
    target_version_id: str | None
    sha256: str
    size: int
    parent_sha256: str
    thread_title: str | None
    source_available: bool


@dataclass(frozen=True)
class MemoryVersionDetail(MemoryVersionView):
    """A version with the whole file after it and a unified diff against its parent (the
    previous retained version; the empty file when there is none)."""

    content: str
    diff: str


@dataclass(frozen=True)
class MemoryVersionList:
    """Every retained version, newest first."""

    versions: list[MemoryVersionView]


@dataclass(frozen=True)
class EntrySource:
    """The version that last introduced or changed an entry's text, and where it came from."""

    actor: str
    version_id: str
    kind: str
    at: datetime
    thread_id: str | None
    message_id: int | None
    run_id: str | None
    thread_title: str | None
    source_available: bool


@dataclass(frozen=True)
class MemoryEntryView:
    """One entry of MEMORY.md (lines 1-based and inclusive, ``bytes`` in UTF-8)."""

    index: int
    text: str
    start_line: int
    end_line: int
    bytes: int
    in_prompt_window: bool
    source: EntrySource | None


@dataclass(frozen=True)
class LintFindingView:
    code: str
    entry_index: int
    message: str


@dataclass(frozen=True)
class MemoryView:
    """MEMORY.md as its owner sees it; ``etag`` is the file API's, for ``If-Match``."""

    etag: str
    size: int
    file_limit_bytes: int
    prompt_window_bytes: int
    enabled: bool
    entries: list[MemoryEntryView]
    lint: list[LintFindingView]


@dataclass(frozen=True)
class MemoryChangeView:
    """A restore or an undo: the version it recorded and the file's new ETag."""

    version: MemoryVersionView
    etag: str


def version_view(row: MemoryVersion | NewVersion, titles: Mapping[str, str]) -> MemoryVersionView:
    """``titles``: thread id → title of the threads that are still there. ``row`` is a stored
    version, or one the write path has just recorded."""
    if row.created_at is None:
        raise ValueError("a version that is not recorded yet has no view")
    available = row.thread_id is not None and row.thread_id in titles
    return MemoryVersionView(
        version_id=row.version_id,
        created_at=row.created_at,
        actor=row.actor,
        kind=row.kind,
        run_id=row.run_id,
        thread_id=row.thread_id,
        message_id=row.message_id,
        tool_call_id=row.tool_call_id,
        target_version_id=row.target_version_id,
        sha256=row.sha256,
        size=row.size,
        parent_sha256=row.parent_sha256,
        thread_title=titles.get(row.thread_id) if available and row.thread_id else None,
        source_available=available,
    )


def entry_source(row: MemoryVersion, titles: Mapping[str, str]) -> EntrySource:
    view = version_view(row, titles)
    return EntrySource(
        actor=view.actor,
        version_id=view.version_id,
        kind=view.kind,
        at=view.created_at,
        thread_id=view.thread_id,
        message_id=view.message_id,
        run_id=view.run_id,
        thread_title=view.thread_title,
        source_available=view.source_available,
    )
