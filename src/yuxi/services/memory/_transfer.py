"""Leaving and arriving with a memory: the export document, and the import of a file as
untrusted input (docs/design.md §10.5).

**Export** (:meth:`MemoryTransfer.export`): the current MEMORY.md and every retained version are
read in one unit of work under the owner's write access (the per-user advisory lock and the
workspace lock), so the document is one consistent moment: its newest version is the file
(unless a change made outside Yuxi is not recorded yet). Retention bounds it: at most
:data:`~yuxi.limits.MEMORY_VERSIONS_KEEP` versions whose contents sum to at most
:data:`~yuxi.limits.MEMORY_VERSIONS_MAX_BYTES` (the newest, ≤ the file limit, always), each with
a diff no larger than the two contents it compares — so the whole document is built in memory.

**Import** (:meth:`MemoryTransfer.preview`, :meth:`MemoryTransfer.apply`): the body is Markdown
(the file itself) or an export document (its ``content``), checked before anything is read or
locked: UTF-8 without NUL (:class:`~yuxi.errors.InvalidImport`), at most the file limit
(:class:`~yuxi.errors.FileTooLarge`), JSON of our format and version
(:class:`~yuxi.errors.UnsupportedImportFormat`). A preview writes nothing and answers what the
file would be (entries, lint, the diff against the current file and that file's ETag). An apply
must name the file it replaces (``If-Match``) and publishes through the same locked write path as
every owner's edit, as one ``user`` / ``import`` version; an import that changes no byte records
nothing.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from yuxi import limits
from yuxi.db.models import MemoryVersion
from yuxi.errors import (
    FileTooLarge,
    InvalidImport,
    PreconditionFailed,
    PreconditionRequired,
    UnsupportedImportFormat,
    UnsupportedMediaType,
    WorkspaceFileNotFound,
)
from yuxi.limits import MEMORY_FILE_MAX_BYTES
from yuxi.services.memory._entries import split_entries
from yuxi.services.memory._import_modes import plan_import
from yuxi.services.memory._lint import lint_memory
from yuxi.services.memory._provenance import unified_diff
from yuxi.services.memory._versions import sha256_hex
from yuxi.services.memory._writer import MemoryWriteAccess
from yuxi.services.memory.views import (
    LintFindingView,
    MemoryVersionDetail,
    MemoryVersionView,
    version_view,
)
from yuxi.services.unit_of_work import UnitOfWorkFactory
from yuxi.workspace.filesystem import MEMORY_PATH, Workspace, etag_for, if_match_allows

__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "IMPORT_MEDIA_TYPES",
    "ImportEntryView",
    "MemoryExport",
    "MemoryImportPreview",
    "MemoryImportResult",
    "MemoryTransfer",
    "encode_export",
    "parse_import",
]

#: The export document's ``format``; ``version`` changes only when a reader of the previous
#: version would misread a document (a field renamed, removed or changing meaning). Adding a
#: field does not change it: readers ignore fields they do not know.
EXPORT_FORMAT = "yuxi-memory-export"
EXPORT_VERSION = 1
#: Media types ``POST /api/v1/memory/import`` accepts (charset, if given, must be UTF-8).
IMPORT_MEDIA_TYPES = ("text/markdown", "text/plain", "application/json")

_LABEL = "MEMORY.md"
_STALE = "MEMORY.md changed since you previewed or loaded it; preview the import again"


@dataclass(frozen=True)
class MemoryExport:
    """The export document (``GET /api/v1/memory/export``); :meth:`to_payload` is its JSON."""

    format: str
    version: int
    exported_at: datetime
    uid: str
    etag: str
    sha256: str
    size: int
    content: str
    #: Every retained version, newest first, each with its content and its diff against the
    #: previous retained version (against the empty file for the oldest).
    versions: list[MemoryVersionDetail]
    lint: list[LintFindingView]
    retention: dict[str, int]

    def to_payload(self) -> dict[str, Any]:
        payload = asdict(self)
        payload["exported_at"] = self.exported_at.isoformat()
        for version in payload["versions"]:
            version["created_at"] = version["created_at"].isoformat()
        return payload


def encode_export(doc: MemoryExport, *, indent: int | None = None) -> bytes:
    """The document as UTF-8 JSON (non-ASCII text as is, not escaped)."""
    return json.dumps(doc.to_payload(), ensure_ascii=False, indent=indent).encode("utf-8")


@dataclass(frozen=True)
class ImportEntryView:
    """One entry the imported file would have (lines 1-based and inclusive, bytes UTF-8)."""

    index: int
    text: str
    start_line: int
    end_line: int
    bytes: int
    in_prompt_window: bool


@dataclass(frozen=True)
class MemoryImportPreview:
    """A dry run: what the file would be. ``etag`` is the current file's, the one the diff is
    against: send it as ``If-Match`` to apply exactly this preview. ``mode``: ``replace`` or
    ``append``; ``current_entries`` (N) the file has now, ``imported_entries`` (M) the imported
    file has, ``new_entries`` of those not in the file already (what an append adds)."""

    dry_run: bool
    changed: bool
    etag: str
    size: int
    sha256: str
    entries: list[ImportEntryView]
    diff: str
    lint: list[LintFindingView]
    mode: str
    current_entries: int
    imported_entries: int
    new_entries: int


@dataclass(frozen=True)
class MemoryImportResult:
    """An applied import: the ``import`` version (``null`` when no byte changed), the new ETag
    and the lint of the imported file."""

    version: MemoryVersionView | None
    changed: bool
    etag: str
    size: int
    lint: list[LintFindingView]
    mode: str


def _check_memory_bytes(data: bytes) -> bytes:
    if len(data) > MEMORY_FILE_MAX_BYTES:
        raise FileTooLarge(
            f"an imported MEMORY.md may be at most {MEMORY_FILE_MAX_BYTES} bytes (UTF-8), "
            f"this one is {len(data)}; nothing was written"
        )
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidImport(
            f"the imported file is not valid UTF-8 (byte {exc.start}); nothing was written"
        ) from None
    if b"\x00" in data:
        raise InvalidImport("the imported file contains a NUL byte; nothing was written")
    return data


def _content_of_document(body: bytes) -> bytes:
    try:
        doc = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise InvalidImport("the export document is not valid UTF-8") from None
    except ValueError as exc:
        raise InvalidImport(f"the export document is not valid JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != EXPORT_FORMAT:
        raise UnsupportedImportFormat(
            f'a JSON import must be a memory export document ("format": "{EXPORT_FORMAT}"); '
            "send Markdown as text/markdown"
        )
    version = doc.get("version")
    if type(version) is not int or version != EXPORT_VERSION:
        raise UnsupportedImportFormat(
            f"this server reads {EXPORT_FORMAT} version {EXPORT_VERSION}, not {version!r}"
        )
    content = doc.get("content")
    if not isinstance(content, str):
        raise UnsupportedImportFormat('the export document has no "content" string')
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidImport("the export document's content is not valid Unicode") from None
    # A document that names its content's digest (every export does) must match it: a copy
    # damaged in transit, or edited by hand, is refused rather than imported as it is.
    stated = doc.get("sha256")
    if stated is not None and stated != sha256_hex(data):
        raise InvalidImport(
            "the export document's content does not match its sha256 (damaged or edited); "
            "nothing was written. To import edited text, send it as text/markdown"
        )
    return data


def parse_import(body: bytes, media_type: str | None) -> bytes:
    """The MEMORY.md bytes an import body stands for, or the error that refuses it (pure)."""
    main, *params = (part.strip().lower() for part in (media_type or "").split(";"))
    charsets = {p.split("=", 1)[1].strip(" \"'") for p in params if p.startswith("charset=")}
    if main not in IMPORT_MEDIA_TYPES or charsets - {"utf-8", "utf8"}:
        raise UnsupportedMediaType(
            "import Markdown as text/markdown or text/plain, or an export document as "
            f"application/json (UTF-8), not {media_type or 'a body without a type'!r}"
        )
    if main == "application/json":
        return _check_memory_bytes(_content_of_document(body))
    return _check_memory_bytes(body)


def _lint_views(text: str) -> list[LintFindingView]:
    return [
        LintFindingView(f.code, f.entry_index, f.message) for f in lint_memory(split_entries(text))
    ]


def _preview(current: bytes, imported: bytes, mode: str) -> MemoryImportPreview:
    plan = plan_import(current, imported, mode)
    data = plan.data
    text = data.decode("utf-8")
    entries = split_entries(text)
    return MemoryImportPreview(
        dry_run=True,
        changed=data != current,
        etag=etag_for(current),
        size=len(data),
        sha256=sha256_hex(data),
        entries=[
            ImportEntryView(e.index, e.text, e.start_line, e.end_line, e.bytes, e.in_prompt_window)
            for e in entries
        ],
        diff=unified_diff(
            current.decode("utf-8", errors="replace"),
            text,
            before_label=f"{_LABEL}@current",
            after_label=f"{_LABEL}@import",
        ),
        lint=[LintFindingView(f.code, f.entry_index, f.message) for f in lint_memory(entries)],
        mode=mode,
        current_entries=plan.current_entries,
        imported_entries=plan.imported_entries,
        new_entries=plan.new_entries,
    )


def _details(
    newest_first: Sequence[MemoryVersion], titles: dict[str, str]
) -> list[MemoryVersionDetail]:
    details = []
    for i, row in enumerate(newest_first):
        previous = newest_first[i + 1] if i + 1 < len(newest_first) else None
        before = "" if previous is None else previous.content
        details.append(
            MemoryVersionDetail(
                **vars(version_view(row, titles)),
                content=row.content,
                diff=unified_diff(
                    before,
                    row.content,
                    before_label=f"{_LABEL}@{previous.version_id if previous else 'empty'}",
                    after_label=f"{_LABEL}@{row.version_id}",
                ),
            )
        )
    return details


class MemoryTransfer:
    def __init__(
        self,
        uow: UnitOfWorkFactory,
        workspace_factory: Callable[[str], Workspace],
    ) -> None:
        self._workspace = workspace_factory
        self._access = MemoryWriteAccess(uow, workspace_factory)

    async def export(self, uid: str) -> MemoryExport:
        async with self._access.for_user(uid) as locked:
            # Read under the owner's write access, so no writer lands between the file and the
            # versions; nothing is published, so nothing is committed.
            current = locked.current
            rows = await locked.uow.memory_versions.list_newest_first(uid)
            threads = {row.thread_id for row in rows if row.thread_id is not None}
            titles = await locked.uow.memory_versions.thread_titles(uid, threads)
        content = current.recordable_text()
        versions, lint = await asyncio.to_thread(
            lambda: (_details(rows, titles), _lint_views(content))
        )
        return MemoryExport(
            format=EXPORT_FORMAT,
            version=EXPORT_VERSION,
            exported_at=datetime.now(UTC),
            uid=uid,
            etag=current.etag,
            sha256=current.sha256,
            size=len(current.data),
            content=content,
            versions=versions,
            lint=lint,
            # Read at each call, like the writer does: the bounds this document was kept under.
            retention={
                "versions_keep": limits.MEMORY_VERSIONS_KEEP,
                "versions_max_bytes": limits.MEMORY_VERSIONS_MAX_BYTES,
                "file_max_bytes": limits.MEMORY_FILE_MAX_BYTES,
            },
        )

    async def read(self, uid: str) -> tuple[bytes, str]:
        """MEMORY.md itself and its ETag (missing reads as empty)."""
        try:
            data = await self._workspace(uid).read_file(MEMORY_PATH, MEMORY_FILE_MAX_BYTES)
        except WorkspaceFileNotFound:
            data = b""
        return data, etag_for(data)

    async def preview(self, uid: str, data: bytes, *, mode: str = "replace") -> MemoryImportPreview:
        """What importing ``data`` (checked by :func:`parse_import`) in ``mode`` would do;
        writes nothing."""
        current, _ = await self.read(uid)
        return await asyncio.to_thread(_preview, current, data, mode)

    async def apply(
        self, uid: str, imported: bytes, *, if_match: str | None, mode: str = "replace"
    ) -> MemoryImportResult:
        """Import ``imported`` (checked by :func:`parse_import`) in ``mode`` (the file becomes it,
        or its new entries follow the current ones), as one ``import`` version."""
        if if_match is None or not if_match.strip():
            raise PreconditionRequired(
                "importing memory needs If-Match with the current ETag of MEMORY.md "
                "(from GET /api/v1/memory or an import dry run)"
            )
        version = None
        async with self._access.for_user(uid) as locked:
            if not if_match_allows(if_match, locked.current.etag):
                raise PreconditionFailed(_STALE)
            # The If-Match above makes this the file the preview planned against.
            plan = await asyncio.to_thread(plan_import, locked.current.data, imported, mode)
            data = plan.data
            if data != locked.current.data or locked.current.truncated:
                version = await locked.publish(data, actor="user", kind="import")
        lint = await asyncio.to_thread(_lint_views, data.decode("utf-8"))
        return MemoryImportResult(
            version=None if version is None else version_view(version, {}),
            changed=version is not None,
            etag=etag_for(data),
            size=len(data),
            lint=lint,
            mode=mode,
        )
