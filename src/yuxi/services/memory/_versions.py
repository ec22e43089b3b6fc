"""Recording one change of MEMORY.md as a version, with crash repair and retention.

Called only by :mod:`yuxi.services.memory._writer`, inside the per-user advisory lock and the
file lock, after the new text is computed and *before* it is published: insert → publish →
commit (the insert, the gap check, the quota count and retention are one statement). So a
committed version always describes a publish that happened, and the only way the history can
fall behind the file is a publish whose commit was lost (a crash, a lost connection), or a
change made outside Yuxi. :func:`record_change` detects that the next time anyone writes —
the file's sha256 is not the newest version's — and first records the file as it is on disk as a
``system`` / ``recovered`` version, so the chain (each ``parent_sha256`` = the previous version's
``sha256``) has no gap and the newest version always equals the file after a write.

Why every commit is synchronous (no ``synchronous_commit = off``): the file is published
before the commit, so a commit lost in a database crash loses no bytes of MEMORY.md, but it
does lose the version row (the next write records the file as ``system`` / ``recovered``: the
agent, run, thread, asking message and tool call of that change are gone, and the
``version_id`` the writer was told no longer exists) and the run's quota count (the run may
write again what it already wrote).

Retention: after each insert, only the newest :data:`~yuxi.limits.MEMORY_VERSIONS_KEEP`
versions are kept, and the oldest go while the retained contents sum to more than
:data:`~yuxi.limits.MEMORY_VERSIONS_MAX_BYTES`; the newest version is never dropped.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass

from yuxi import limits
from yuxi.repositories.memory.version_repository import EMPTY_SHA256, NewVersion, Quota
from yuxi.services.unit_of_work import UnitOfWork
from yuxi.workspace.filesystem import etag_for

__all__ = [
    "EMPTY_SHA256",
    "CurrentFile",
    "NewVersion",
    "Provenance",
    "Quota",
    "new_version_id",
    "record_change",
    "sha256_hex",
]


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def new_version_id() -> str:
    return "mv_" + uuid.uuid4().hex


@dataclass(frozen=True)
class CurrentFile:
    """MEMORY.md as read under the locks (at most the file limit; missing reads as empty)."""

    data: bytes
    #: The file was larger than the limit and ``data`` is only its beginning (it can only get
    #: that large by an edit outside Yuxi).
    truncated: bool = False

    @property
    def sha256(self) -> str:
        return sha256_hex(self.data)

    @property
    def etag(self) -> str:
        return etag_for(self.data)

    def recordable_text(self) -> str:
        """The text a version can hold: invalid UTF-8 and NUL become U+FFFD (only files edited
        outside Yuxi can contain them; the version's sha256 is still that of the bytes)."""
        return self.data.decode("utf-8", errors="replace").replace("\x00", "\ufffd")


@dataclass(frozen=True)
class Provenance:
    """Why an agent wrote: the run, its thread, the user message that asked, the tool call."""

    run_id: str | None = None
    thread_id: str | None = None
    message_id: int | None = None
    tool_call_id: str | None = None


NO_PROVENANCE = Provenance()


async def record_change(
    uow: UnitOfWork,
    uid: str,
    current: CurrentFile,
    result: bytes,
    *,
    actor: str,
    kind: str,
    provenance: Provenance = NO_PROVENANCE,
    target_version_id: str | None = None,
    quota: Quota | None = None,
) -> NewVersion:
    """Record the change ``current`` → ``result`` (repairing a gap first), count ``quota`` and
    apply retention; returns the row.

    The steady state is one statement (:meth:`MemoryVersionRepository.record`): it inserts only
    if the newest version is ``current``. If it is not (the history fell behind the file), the
    file as it is on disk is recorded first as ``system`` / ``recovered`` (by the same
    statement: its parent is the newest version, so it fits) and the statement is run again.
    Pruning after each of the two inserts keeps exactly what pruning once after both would: the
    versions the second keeps are a newest-first run the first kept too.
    """
    repo = uow.memory_versions
    version = NewVersion(
        version_id=new_version_id(),
        uid=uid,
        actor=actor,
        kind=kind,
        run_id=provenance.run_id,
        thread_id=provenance.thread_id,
        message_id=provenance.message_id,
        tool_call_id=provenance.tool_call_id,
        target_version_id=target_version_id,
        sha256=sha256_hex(result),
        size=len(result),
        parent_sha256=current.sha256,
        content=result.decode("utf-8"),
    )
    # Read at each call, not bound at import: one definition, which a test may lower.
    keep, max_bytes = limits.MEMORY_VERSIONS_KEEP, limits.MEMORY_VERSIONS_MAX_BYTES
    recorded = await repo.record(version, keep=keep, max_bytes=max_bytes, quota=quota)
    if recorded is not None:
        return recorded
    known = await repo.newest_sha256(uid) or EMPTY_SHA256
    recovered = await repo.record(
        NewVersion(
            version_id=new_version_id(),
            uid=uid,
            actor="system",
            kind="recovered",
            sha256=current.sha256,
            size=len(current.data),
            parent_sha256=known,
            content=current.recordable_text(),
        ),
        keep=keep,
        max_bytes=max_bytes,
    )
    assert recovered is not None, "its parent is the newest version, read under the lock"
    recorded = await repo.record(version, keep=keep, max_bytes=max_bytes, quota=quota)
    assert recorded is not None, "the recovered version is the newest under the lock"
    return recorded
