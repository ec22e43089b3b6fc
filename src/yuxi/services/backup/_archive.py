"""Writing an archive (to ``<out>.partial``, renamed into place only once whole and fsynced) and
reading one back: a full verification pass that writes nothing, then an extraction pass that
checks every hash again as it goes.

Blocking code: callers run it in a worker thread.
"""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO

from yuxi.errors import ArchiveInvalid
from yuxi.services.backup._manifest import (
    MANIFEST_MAX_BYTES,
    MANIFEST_MEMBER,
    PREFIX,
    ArchivedFile,
    Manifest,
    parse_manifest,
)

Progress = Callable[[str], None]
_CHUNK = 1 << 20


class _Hashing(io.RawIOBase):
    """A reader that hashes (and counts) what passes through it."""

    def __init__(self, source: IO[bytes]) -> None:
        self._source = source
        self.digest = hashlib.sha256()
        self.count = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data = self._source.read(size)
        self.digest.update(data)
        self.count += len(data)
        return data


class ArchiveWriter:
    """One archive being written; :meth:`finish` adds the manifest and publishes it."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.partial = out.with_name(out.name + ".partial")
        # Open across calls (closed by finish or abandon), hence no ``with``.
        self._tar = tarfile.open(self.partial, "w", format=tarfile.PAX_FORMAT)  # noqa: SIM115
        self.files: list[ArchivedFile] = []
        self.bytes = 0

    def add(
        self,
        member: str,
        source: IO[bytes],
        size: int,
        *,
        uid: str | None = None,
        path: str | None = None,
    ) -> ArchivedFile:
        info = tarfile.TarInfo(member)
        info.size, info.mode, info.mtime = size, 0o600, int(time.time())
        reader = _Hashing(source)
        self._tar.addfile(info, reader)  # reads exactly ``size`` bytes, or raises
        entry = ArchivedFile(member, size, reader.digest.hexdigest(), uid, path)
        self.files.append(entry)
        self.bytes += size
        return entry

    def add_bytes(self, member: str, data: bytes, **owner: str | None) -> ArchivedFile:
        return self.add(member, io.BytesIO(data), len(data), **owner)

    def finish(self, manifest: Manifest) -> None:
        manifest.files = list(self.files)
        data = manifest.to_json()
        info = tarfile.TarInfo(MANIFEST_MEMBER)
        info.size, info.mode, info.mtime = len(data), 0o600, int(time.time())
        self._tar.addfile(info, io.BytesIO(data))
        self._tar.close()
        with open(self.partial, "rb") as handle:
            os.fsync(handle.fileno())
        os.rename(self.partial, self.out)
        directory = os.open(self.out.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)

    def abandon(self) -> None:
        with suppress(OSError, tarfile.TarError):  # the archive is being thrown away
            self._tar.close()
        self.partial.unlink(missing_ok=True)


@contextmanager
def _reading(archive: Path) -> Iterator[tarfile.TarFile]:
    try:
        with tarfile.open(archive, "r|") as tar:
            yield tar
    except ArchiveInvalid:
        raise
    except FileNotFoundError as exc:
        raise ArchiveInvalid(f"{archive}: no such file") from exc
    except (tarfile.TarError, EOFError, OSError, ValueError) as exc:
        raise ArchiveInvalid(f"{archive} is damaged or truncated: {exc}") from exc


def _members(tar: tarfile.TarFile) -> Iterator[tuple[tarfile.TarInfo, IO[bytes]]]:
    seen: set[str] = set()
    for info in tar:
        if not info.isfile() or not info.name.startswith(PREFIX) or info.name in seen:
            raise ArchiveInvalid(f"unexpected member {info.name!r} (not a Yuxi backup?)")
        seen.add(info.name)
        handle = tar.extractfile(info)
        if handle is None:  # pragma: no cover - isfile() above
            raise ArchiveInvalid(f"unreadable member {info.name!r}")
        yield info, handle


def verify_archive(archive: Path, progress: Progress | None = None) -> Manifest:
    """Read the whole archive and check it against its manifest; writes nothing. Every problem
    (truncation, a changed byte, a missing or extra member, a bad or newer manifest) raises
    :class:`ArchiveInvalid` (or ``ArchiveUnsupported``) with what was found."""
    hashes: dict[str, tuple[int, str]] = {}
    raw_manifest: bytes | None = None
    last = time.monotonic()
    with _reading(archive) as tar:
        for info, handle in _members(tar):
            if info.name == MANIFEST_MEMBER:
                if info.size > MANIFEST_MAX_BYTES:
                    raise ArchiveInvalid("the manifest is too large to be one")
                raw_manifest = handle.read()
                continue
            digest = hashlib.sha256()
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
            hashes[info.name] = (info.size, digest.hexdigest())
            if progress is not None and time.monotonic() - last > 2:
                last = time.monotonic()
                progress(f"verifying: {len(hashes)} members read")
    if raw_manifest is None:
        raise ArchiveInvalid(f"{archive} has no manifest (truncated, or not a Yuxi backup)")
    manifest = parse_manifest(raw_manifest)
    listed = {f.member: f for f in manifest.files}
    missing = sorted(set(listed) - set(hashes))
    extra = sorted(set(hashes) - set(listed))
    if missing:
        raise ArchiveInvalid(f"{archive} lacks {len(missing)} listed member(s), e.g. {missing[0]}")
    if extra:
        raise ArchiveInvalid(f"{archive} holds {len(extra)} unlisted member(s), e.g. {extra[0]}")
    for name, (size, sha) in hashes.items():
        if (size, sha) != (listed[name].size, listed[name].sha256):
            raise ArchiveInvalid(f"{archive}: checksum mismatch on {name}")
    return manifest


def extract_archive(
    archive: Path, manifest: Manifest, write: Callable[[ArchivedFile, IO[bytes]], None]
) -> None:
    """Hand every listed member to ``write`` (streamed), checking its hash again; a member that
    no longer matches (the file changed since :func:`verify_archive`) raises."""
    listed = {f.member: f for f in manifest.files}
    with _reading(archive) as tar:
        for info, handle in _members(tar):
            entry = listed.get(info.name)
            if entry is None:
                continue  # the manifest
            reader = _Hashing(handle)
            write(entry, reader)  # type: ignore[arg-type]
            while reader.read(_CHUNK):  # what ``write`` skipped still counts
                pass
            if (reader.count, reader.digest.hexdigest()) != (entry.size, entry.sha256):
                raise ArchiveInvalid(f"{archive} changed while it was restored ({info.name})")
