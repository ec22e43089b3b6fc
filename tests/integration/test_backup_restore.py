"""``yuxi backup`` / ``yuxi restore`` on a real PostgreSQL: the manifest, the refusals, and a
small round trip (the reliability tier has the one with writers running during the backup).

Every refusal is checked to have written nothing: the target database still has no table and
the target data dir's tree hashes the same.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import tarfile
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from alembic.script import ScriptDirectory

from tests.support.backup import compare_users, tree_digest, user_rows
from tests.support.factories import make_user, memory_file
from tests.support.postgres import with_database
from yuxi import __version__
from yuxi.bootstrap import Container, bootstrap
from yuxi.db.dump import run_pg_dump
from yuxi.db.migrate import MIGRATIONS_DIR, upgrade_sync
from yuxi.errors import (
    ArchiveInvalid,
    ArchiveUnsupported,
    BackupFailed,
    RestoreTargetNotEmpty,
)
from yuxi.services.backup import (
    DATABASE_MEMBER,
    FORMAT_VERSION,
    MANIFEST_MEMBER,
    parse_manifest,
    workspace_member,
)
from yuxi.settings import Settings
from yuxi.workspace.filesystem import MEMORY_PATH

MARK = "备份标记-backup-marker"


@pytest.fixture
async def target(empty_database_url: str, tmp_path: Path) -> AsyncIterator[Container]:
    """An empty database and an empty data dir to restore into."""
    c = await bootstrap(Settings(database_url=empty_database_url, data_dir=tmp_path / "restored"))
    try:
        yield c
    finally:
        await c.aclose()


async def _populate(c: Container) -> list[str]:
    uids = []
    for n in range(3):
        uid = await make_user(c, name=f"user-{n}")
        await c.services.memory.write_memory_file(uid, f"- {MARK} {n}\n".encode())
        await c.services.memory.write_memory_file(uid, f"- {MARK} {n}\n- 第二条 {n}\n".encode())
        await c.workspace(uid).write_file("notes/a.txt", f"notes {n}".encode())
        await c.workspace(uid).write_file("笔记/第一.md", f"中文 {n}".encode())
        thread = await c.services.chat.create_thread(uid, title=f"线程 {n}")
        await c.services.chat.submit(uid, thread.thread_id, f"hello {n}")
        uids.append(uid)
    return uids


def _rewrite(archive: Path, out: Path, change: dict[str, bytes | None]) -> None:
    """Copy ``archive`` to ``out`` with members replaced (bytes) or dropped (None)."""
    with tarfile.open(archive) as src, tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as dst:
        for info in src:
            data = src.extractfile(info).read()  # type: ignore[union-attr]
            if info.name in change:
                replaced = change[info.name]
                if replaced is None:
                    continue
                data = replaced
            info.size = len(data)
            dst.addfile(info, io.BytesIO(data))


def _manifest_bytes(archive: Path) -> bytes:
    with tarfile.open(archive) as tar:
        return tar.extractfile(MANIFEST_MEMBER).read()  # type: ignore[union-attr]


async def _assert_untouched(target: Container, before: str) -> None:
    async with target.uow() as uow:
        assert await uow.backup.tables() == []
    assert tree_digest(target.settings.data_dir) == before


async def test_the_manifest_lists_versions_counts_and_every_file(
    container: Container, tmp_path: Path
) -> None:
    uids = await _populate(container)
    out = tmp_path / "b.tar"
    lines: list[str] = []
    result = await container.services.backup.create(out, progress=lines.append)
    manifest = parse_manifest(_manifest_bytes(out))
    assert manifest.format_version == FORMAT_VERSION and manifest.yuxi_version == __version__
    assert manifest.postgresql["server_version_num"] >= 140000
    assert "pg_dump" in manifest.postgresql["pg_dump"]
    assert manifest.tables["public.users"] == 3 and manifest.tables["public.memory_versions"] == 6
    assert "public.checkpoints" in manifest.tables and "public.alembic_version" in manifest.tables
    assert sorted(manifest.users) == sorted(uids)
    # Every member's sha256 is in the manifest and matches the bytes.
    with tarfile.open(out) as tar:
        names = [m.name for m in tar.getmembers()]
        assert names[-1] == MANIFEST_MEMBER
        for entry in manifest.files:
            data = tar.extractfile(entry.member).read()  # type: ignore[union-attr]
            assert hashlib.sha256(data).hexdigest() == entry.sha256
    assert sorted(names[:-1]) == sorted(f.member for f in manifest.files)
    for uid in uids:
        assert workspace_member(uid, MEMORY_PATH) in names
        assert manifest.memory[uid]["seq"] == 2 and manifest.memory[uid]["source"] == "workspace"
    assert DATABASE_MEMBER in names
    assert result.users == 3 and not (tmp_path / "b.tar.partial").exists()
    assert any("dump" in line for line in lines)
    # An existing file is never overwritten.
    with pytest.raises(Exception, match="exists"):
        await container.services.backup.create(out)


async def test_round_trip_restores_users_memory_threads_and_tokens(
    container: Container, target: Container, tmp_path: Path
) -> None:
    uids = await _populate(container)
    issued = await container.services.users.create_user("with-token")
    uids.append(issued.uid)
    out = tmp_path / "b.tar"
    await container.services.backup.create(out)
    result = await target.services.restore.restore(out)
    assert result.users == 4
    await compare_users(container, target, uids)
    assert await target.services.users.authenticate(issued.token) == issued.uid
    # At this code's head: migrations ran after the dump was restored.
    async with target.uow() as uow:
        assert (
            await uow.backup.schema_revision()
            == ScriptDirectory(str(MIGRATIONS_DIR)).get_current_head()
        )


@pytest.mark.parametrize("damage", ["flip", "truncate", "missing", "extra", "manifest", "newer"])
async def test_a_damaged_archive_is_refused_before_anything_is_written(
    container: Container, target: Container, tmp_path: Path, damage: str
) -> None:
    uids = await _populate(container)
    good = tmp_path / "good.tar"
    await container.services.backup.create(good)
    bad = tmp_path / "bad.tar"
    notes = workspace_member(uids[0], "notes/a.txt")
    if damage == "flip":
        _rewrite(good, bad, {notes: b"notes X"})
    elif damage == "truncate":
        data = good.read_bytes()
        bad.write_bytes(data[: len(data) // 2])
    elif damage == "missing":
        _rewrite(good, bad, {notes: None})
    elif damage == "extra":
        _rewrite(good, bad, {})
        with tarfile.open(bad, "a") as tar:
            info = tarfile.TarInfo("yuxi-backup/workspaces/x/evil.txt")
            info.size = 4
            tar.addfile(info, io.BytesIO(b"evil"))
    else:
        manifest = json.loads(_manifest_bytes(good))
        if damage == "manifest":
            del manifest["tables"]
        else:
            manifest["format_version"] = FORMAT_VERSION + 1
        _rewrite(good, bad, {MANIFEST_MEMBER: json.dumps(manifest).encode()})
    before = tree_digest(target.settings.data_dir)
    expected = ArchiveUnsupported if damage == "newer" else ArchiveInvalid
    with pytest.raises(expected):
        await target.services.restore.restore(bad)
    await _assert_untouched(target, before)


async def test_an_unknown_schema_revision_is_refused(
    container: Container, target: Container, tmp_path: Path
) -> None:
    await _populate(container)
    good, bad = tmp_path / "good.tar", tmp_path / "bad.tar"
    await container.services.backup.create(good)
    manifest = json.loads(_manifest_bytes(good))
    manifest["schema_revision"] = "9999_from_the_future"
    _rewrite(good, bad, {MANIFEST_MEMBER: json.dumps(manifest).encode()})
    before = tree_digest(target.settings.data_dir)
    with pytest.raises(ArchiveUnsupported, match="9999_from_the_future"):
        await target.services.restore.restore(bad)
    await _assert_untouched(target, before)


async def test_a_non_empty_target_is_refused_unless_forced(
    container: Container, tmp_path: Path
) -> None:
    """Restoring onto the live deployment itself: refused, nothing changed; --force replaces."""
    uids = await _populate(container)
    out = tmp_path / "b.tar"
    await container.services.backup.create(out)
    late = await make_user(container, name="after-the-backup")
    await container.services.memory.write_memory_file(late, b"- later\n")
    before = tree_digest(container.settings.data_dir)
    with pytest.raises(RestoreTargetNotEmpty, match="--force"):
        await container.services.restore.restore(out)
    assert tree_digest(container.settings.data_dir) == before
    assert late in {u.uid for u in await container.services.users.list_users()}

    await container.services.restore.restore(out, force=True)
    assert sorted(u.uid for u in await container.services.users.list_users()) == sorted(uids)
    assert not container.workspace(late).directory.exists()


async def _restored_memory(target: Container, uid: str) -> tuple[bytes, list[dict[str, object]]]:
    rows = await user_rows(target, uid)
    return memory_file(target, uid).read_bytes(), rows["memory_versions"]


async def test_a_memory_write_between_the_copy_and_the_snapshot_is_in_wholly(
    container: Container, target: Container, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file was copied before the write; the write's version is in the snapshot: the
    archive takes the file from that version, so file and version come back together."""
    uid = await make_user(container)
    await container.services.memory.write_memory_file(uid, b"- before\n")
    service = container.services.backup
    original = service._dump_and_reconcile
    after = f"- before\n- {MARK} between\n".encode()

    async def write_then_snapshot(*args: Any, **kwargs: Any) -> Any:
        await container.services.memory.write_memory_file(uid, after)
        return await original(*args, **kwargs)

    monkeypatch.setattr(service, "_dump_and_reconcile", write_then_snapshot)
    out = tmp_path / "b.tar"
    made = await service.create(out)
    assert made.memory_from_snapshot == 1
    assert parse_manifest(_manifest_bytes(out)).memory[uid]["source"] == "version"
    await target.services.restore.restore(out)
    data, versions = await _restored_memory(target, uid)
    assert data == after and len(versions) == 2
    assert versions[-1]["sha256"] == hashlib.sha256(after).hexdigest()


async def test_a_memory_write_after_the_snapshot_is_not_in_at_all(
    container: Container, target: Container, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that commits while pg_dump runs is in neither the dump nor the copied file."""
    uid = await make_user(container)
    await container.services.memory.write_memory_file(uid, b"- before\n")
    loop = asyncio.get_running_loop()

    def write_then_dump(*args: Any, **kwargs: Any) -> Any:
        later = container.services.memory.write_memory_file(uid, f"- {MARK} later\n".encode())
        asyncio.run_coroutine_threadsafe(later, loop).result(timeout=60)
        return run_pg_dump(*args, **kwargs)

    monkeypatch.setattr("yuxi.services.backup.backup.run_pg_dump", write_then_dump)
    out = tmp_path / "b.tar"
    made = await container.services.backup.create(out)
    assert made.memory_from_snapshot == 0
    assert MARK.encode() in memory_file(container, uid).read_bytes()  # it did commit
    await target.services.restore.restore(out)
    data, versions = await _restored_memory(target, uid)
    assert data == b"- before\n" and len(versions) == 1
    assert versions[0]["sha256"] == hashlib.sha256(data).hexdigest()


async def test_a_failed_backup_leaves_nothing_behind(
    container: Container, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pg_dump failing (a server gone, a disk full): no archive, no .partial, no spool."""
    await _populate(container)

    def failing_dump(*args: Any, **kwargs: Any) -> Any:
        raise BackupFailed("pg_dump failed (exit 1): simulated")

    monkeypatch.setattr("yuxi.services.backup.backup.run_pg_dump", failing_dump)
    out_dir = tmp_path / "backups"
    out_dir.mkdir()
    with pytest.raises(BackupFailed, match="simulated"):
        await container.services.backup.create(out_dir / "b.tar")
    assert list(out_dir.iterdir()) == []


async def test_an_archive_of_an_older_schema_is_migrated_to_head_after_the_restore(
    pg_server_url: str, target: Container, tmp_path: Path
) -> None:
    """A backup taken at an older schema revision (0009) restores, then this code's migrations
    run over the restored rows: the archive's run with a server-prefixed client request id comes
    out as 0010 makes it, and the rest is as it was."""
    name = f"yuxi_old_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = with_database(pg_server_url, name)
    try:
        upgrade_sync(url, "0009")
        with psycopg.connect(url) as conn:
            conn.execute("INSERT INTO users (uid, name) VALUES ('u_old', '旧用户')")
            conn.execute(
                "INSERT INTO conversations (thread_id, uid, title, source, status) "
                "VALUES ('t_old', 'u_old', '旧线程', 'chat', 'active')"
            )
            conn.execute(
                "INSERT INTO agent_runs (id, uid, conversation_thread_id, request_id, run_type, "
                "status) VALUES ('r_old', 'u_old', 't_old', 'resume:r_x', 'chat', 'completed')"
            )
        source = await bootstrap(Settings(database_url=url, data_dir=tmp_path / "old"))
        try:
            await source.workspace("u_old").write_file("笔记.md", f"{MARK} old".encode())
            out = tmp_path / "old.tar"
            await source.services.backup.create(out)
        finally:
            await source.aclose()
        assert parse_manifest(_manifest_bytes(out)).schema_revision == "0009"

        await target.services.restore.restore(out)
        async with target.uow() as uow:
            assert (
                await uow.backup.schema_revision()
                == ScriptDirectory(str(MIGRATIONS_DIR)).get_current_head()
            )
        target_url = target.settings.database_url
        assert target_url is not None
        with psycopg.connect(target_url) as conn:
            runs = conn.execute("SELECT id, request_id FROM agent_runs").fetchall()
            users = conn.execute("SELECT uid, name FROM users").fetchall()
        assert runs == [("r_old", "client:r_old")]  # 0010 ran over the restored rows
        assert users == [("u_old", "旧用户")]
        restored = target.workspace("u_old").directory / "笔记.md"
        assert restored.read_text("utf-8") == f"{MARK} old"
    finally:
        with psycopg.connect(pg_server_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
