"""The backup archive's layout and its manifest (pure: no I/O).

An archive is one POSIX tar (``pax`` headers, uncompressed: the database dump inside is already
compressed by ``pg_dump``) whose every member lives under ``yuxi-backup/``:

* ``yuxi-backup/workspaces/<workspace dir>/<path>`` — every regular file of every user's
  workspace (``<workspace dir>`` as :func:`yuxi.workspace.workspace_dirname` names it);
* ``yuxi-backup/database.pgdump`` — ``pg_dump --format=custom`` of the whole database;
* ``yuxi-backup/manifest.json`` — written last: the format, the versions, the row count of every
  table, and the size and sha256 of every other member.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from yuxi.errors import ArchiveInvalid, ArchiveUnsupported
from yuxi.workspace.filesystem import split_relative_path, workspace_dirname

FORMAT = "yuxi-backup"
#: Bumped when a reader of the previous version could not restore an archive correctly.
FORMAT_VERSION = 1
PREFIX = "yuxi-backup/"
MANIFEST_MEMBER = PREFIX + "manifest.json"
DATABASE_MEMBER = PREFIX + "database.pgdump"
#: A manifest larger than this is not one of ours: it is read whole before anything else.
MANIFEST_MAX_BYTES = 64 * 1024 * 1024


def workspace_member(uid: str, path: str) -> str:
    return f"{PREFIX}workspaces/{workspace_dirname(uid)}/{path}"


@dataclass(frozen=True)
class ArchivedFile:
    """One member other than the manifest. ``uid``/``path`` are set for workspace files."""

    member: str
    size: int
    sha256: str
    uid: str | None = None
    path: str | None = None


@dataclass
class Manifest:
    yuxi_version: str
    created_at: str
    #: ``server_version``, ``server_version_num`` and ``pg_dump`` (its ``--version`` line).
    postgresql: dict[str, Any]
    #: Alembic's revision of the dumped database.
    schema_revision: str | None
    #: ``schema.table`` → rows, counted in the snapshot the dump was taken from.
    tables: dict[str, int]
    #: The users in that snapshot; workspace files of any other uid are not restored.
    users: list[str]
    #: uid → how its MEMORY.md was taken: ``seq`` (newest version in the snapshot, 0: none),
    #: ``sha256`` of the archived file (``None``: absent) and ``source`` (``workspace``: the
    #: file as copied under the user's lock; ``version``: the snapshot's newest version, because
    #: a write committed between the copy and the snapshot).
    memory: dict[str, dict[str, Any]]
    files: list[ArchivedFile] = field(default_factory=list)
    format: str = FORMAT
    format_version: int = FORMAT_VERSION

    def to_json(self) -> bytes:
        data = asdict(self)
        return json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True).encode("utf-8")

    @property
    def database(self) -> ArchivedFile:
        return next(f for f in self.files if f.member == DATABASE_MEMBER)

    def workspace_files(self) -> list[ArchivedFile]:
        return [f for f in self.files if f.uid is not None]


def _need(data: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    value = data.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise ArchiveInvalid(f"bad manifest: {key!r} is missing or of the wrong type")
    return value


def _file(raw: object) -> ArchivedFile:
    if not isinstance(raw, dict):
        raise ArchiveInvalid("bad manifest: a file entry is not an object")
    member = _need(raw, "member", str)
    size = _need(raw, "size", int)
    sha = _need(raw, "sha256", str)
    uid, path = raw.get("uid"), raw.get("path")
    if size < 0 or len(sha) != 64 or not all(c in "0123456789abcdef" for c in sha):
        raise ArchiveInvalid(f"bad manifest: the entry of {member!r} has a bad size or sha256")
    if uid is None and path is None:
        if member != DATABASE_MEMBER:
            raise ArchiveInvalid(f"bad manifest: unknown member {member!r}")
    else:
        if not isinstance(uid, str) or not isinstance(path, str):
            raise ArchiveInvalid(f"bad manifest: the entry of {member!r} has a bad uid or path")
        try:
            split_relative_path(path)
            expected = workspace_member(uid, path)
        except Exception as exc:
            raise ArchiveInvalid(f"bad manifest: unsafe workspace path {path!r}") from exc
        if member != expected:
            raise ArchiveInvalid(f"bad manifest: {member!r} is not where {path!r} belongs")
    return ArchivedFile(member, size, sha, uid, path)


def parse_manifest(raw: bytes) -> Manifest:
    """The manifest of an archive, every field checked; a newer format is ``ArchiveUnsupported``
    and anything else wrong ``ArchiveInvalid``."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArchiveInvalid(f"bad manifest: not JSON ({exc})") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ArchiveInvalid("bad manifest: not a Yuxi backup")
    version = _need(data, "format_version", int)
    if version > FORMAT_VERSION:
        raise ArchiveUnsupported(
            f"this archive has format version {version}; this Yuxi reads up to "
            f"{FORMAT_VERSION}: restore it with the Yuxi version that made it "
            f"({data.get('yuxi_version')!r}) or newer"
        )
    if version < 1:
        raise ArchiveInvalid(f"bad manifest: format version {version}")
    files = [_file(raw) for raw in _need(data, "files", list)]
    members = [f.member for f in files]
    if len(set(members)) != len(members):
        raise ArchiveInvalid("bad manifest: a member is listed twice")
    if DATABASE_MEMBER not in members:
        raise ArchiveInvalid("bad manifest: no database dump listed")
    tables = _need(data, "tables", dict)
    if not all(isinstance(k, str) and isinstance(v, int) for k, v in tables.items()):
        raise ArchiveInvalid("bad manifest: bad table counts")
    users = _need(data, "users", list)
    if not all(isinstance(u, str) for u in users):
        raise ArchiveInvalid("bad manifest: bad user list")
    revision = data.get("schema_revision")
    if revision is not None and not isinstance(revision, str):
        raise ArchiveInvalid("bad manifest: bad schema revision")
    return Manifest(
        yuxi_version=_need(data, "yuxi_version", str),
        created_at=_need(data, "created_at", str),
        postgresql=_need(data, "postgresql", dict),
        schema_revision=revision,
        tables=tables,
        users=users,
        memory=_need(data, "memory", dict),
        files=files,
        format_version=version,
    )
