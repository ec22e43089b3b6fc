"""Workspace filesystem: every test is named after the attack or failure it stops."""

from __future__ import annotations

import asyncio
import errno
import os
import shutil
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from yuxi.errors import (
    FileTooLarge,
    InvalidArgument,
    NotARegularFile,
    StorageFull,
    SymlinkRefused,
    UnsafePath,
    WorkspaceFileNotFound,
)
from yuxi.workspace import is_temp_name, publishing, split_relative_path, workspace_dirname
from yuxi.workspace.filesystem import (
    AGENTS_PATH,
    MEMORY_PATH,
    USER_PATH,
    FileEntry,
    Workspace,
    etag_for,
)

OLD = b"# memory\n\nold fact\n"
NEW = "新的记忆：用户喜欢简洁的回答。😀\n".encode()


# --- helpers ---------------------------------------------------------------------------------


def mode_of(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def temp_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path / "workspaces", "alice")
    workspace.ensure_user_workspace_sync()
    return workspace


@pytest.fixture
def memory(ws: Workspace) -> Path:
    """MEMORY.md holding OLD."""
    ws.replace_file_sync(MEMORY_PATH, OLD)
    return ws.directory / MEMORY_PATH


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file outside every workspace that an attacker wants us to overwrite or disclose."""
    target = tmp_path / "outside" / "secret.txt"
    target.parent.mkdir()
    target.write_bytes(b"do not touch")
    return target


@contextmanager
def umask(value: int) -> Iterator[None]:
    previous = os.umask(value)
    try:
        yield
    finally:
        os.umask(previous)


def fail_on_regular_fd(real: Callable[..., Any], exc: BaseException) -> Callable[..., Any]:
    def fake(fd: int, *args: Any) -> Any:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            raise exc
        return real(fd, *args)

    return fake


# --- user directory names ----------------------------------------------------------------------


def test_uid_maps_to_safe_deterministic_directory_name() -> None:
    name = workspace_dirname("alice@example.com")
    assert name == workspace_dirname("alice@example.com")
    assert name.startswith("alice_example_com-")
    assert len(name.rsplit("-", 1)[1]) == 32


@pytest.mark.parametrize("uid", ["../../etc", "/root", "a/b", "..", ".", "用户", "x\x00y", "-rf"])
def test_hostile_uid_cannot_escape_root(tmp_path: Path, uid: str) -> None:
    name = workspace_dirname(uid)
    assert "/" not in name and "\x00" not in name and name not in (".", "..")
    assert not name.startswith(("-", "."))
    ws = Workspace(tmp_path / "workspaces", uid)
    assert ws.directory.parent == tmp_path / "workspaces"


def test_similar_uids_get_distinct_directories() -> None:
    uids = ["alice", "Alice", "alice ", "alice_", "alice/", "a" * 24 + "x", "a" * 24 + "y"]
    assert len({workspace_dirname(uid) for uid in uids}) == len(uids)


@pytest.mark.parametrize("uid", ["", None, 123, "bad\ud800"])
def test_empty_or_invalid_uid_is_refused(tmp_path: Path, uid: Any) -> None:
    with pytest.raises(InvalidArgument):
        Workspace(tmp_path, uid)


# --- ensure_user_workspace ------------------------------------------------------------------------


async def test_ensure_creates_owner_only_dirs_and_files(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "workspaces", "bob")
    await ws.ensure_user_workspace()
    assert mode_of(tmp_path / "workspaces") == 0o700
    assert mode_of(ws.directory) == 0o700
    assert mode_of(ws.directory / "agents") == 0o700
    for rel in (AGENTS_PATH, USER_PATH, MEMORY_PATH):
        assert (ws.directory / rel).read_bytes() == b""
        assert mode_of(ws.directory / rel) == 0o600


async def test_ensure_with_restrictive_umask_still_gives_exact_modes(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "workspaces", "bob")
    with umask(0o277):
        await ws.ensure_user_workspace()
    assert mode_of(ws.directory / "agents") == 0o700
    assert mode_of(ws.directory / MEMORY_PATH) == 0o600


async def test_ensure_never_overwrites_existing_content(ws: Workspace) -> None:
    for rel in (AGENTS_PATH, USER_PATH, MEMORY_PATH):
        await ws.write_file(rel, rel.encode() + b" content")
    await ws.ensure_user_workspace()
    await ws.ensure_user_workspace()
    for rel in (AGENTS_PATH, USER_PATH, MEMORY_PATH):
        assert (ws.directory / rel).read_bytes() == rel.encode() + b" content"


async def test_ensure_recreates_only_missing_files(ws: Workspace) -> None:
    await ws.write_file(AGENTS_PATH, b"keep")
    (ws.directory / MEMORY_PATH).unlink()
    await ws.ensure_user_workspace()
    assert (ws.directory / AGENTS_PATH).read_bytes() == b"keep"
    assert (ws.directory / MEMORY_PATH).read_bytes() == b""


async def test_ensure_does_not_write_through_symlinked_memory(ws: Workspace, outside: Path) -> None:
    target = ws.directory / MEMORY_PATH
    target.unlink()
    target.symlink_to(outside)
    await ws.ensure_user_workspace()
    assert target.is_symlink()
    assert outside.read_bytes() == b"do not touch"


async def test_ensure_refuses_symlinked_agents_dir(ws: Workspace, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.rmtree(ws.directory / "agents")
    (ws.directory / "agents").symlink_to(elsewhere)
    with pytest.raises(SymlinkRefused):
        await ws.ensure_user_workspace()
    assert list(elsewhere.iterdir()) == []


# --- path validation --------------------------------------------------------------------------

UNSAFE_PATHS = [
    "../escape.md",
    "agents/../../escape.md",
    "agents/..",
    "..",
    "/etc/passwd",
    "/agents/MEMORY.md",
    "agents\\MEMORY.md",
    "..\\escape.md",
    "agents/MEMORY.md\x00.txt",
    "agents//MEMORY.md",
    "agents/",
    "./agents/MEMORY.md",
    "agents/./MEMORY.md",
    ".",
    "",
    "a" * 256,
    "agents/" + "记" * 86,  # 258 bytes in one component
    "/".join(["d" * 200] * 6),  # > 1024 bytes in total
    "agents/bad\udc80.md",
    "agents/.MEMORY.md.0123456789abcdef0123456789abcdef.tmp",
]


@pytest.mark.parametrize("path", UNSAFE_PATHS)
async def test_dot_dot_absolute_backslash_nul_empty_and_overlong_paths_are_refused(
    ws: Workspace, tmp_path: Path, path: str
) -> None:
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    with pytest.raises(UnsafePath):
        await ws.replace_file(path, b"x")
    with pytest.raises(UnsafePath):
        await ws.read_file(path, 100)
    with pytest.raises(UnsafePath):
        await ws.read_file_prefix(path, 100)
    with pytest.raises(UnsafePath):
        await ws.delete_file(path)
    with pytest.raises(UnsafePath):
        await ws.stat_file(path)
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before


@pytest.mark.parametrize("path", [None, 5, b"agents/MEMORY.md", Path("agents/MEMORY.md")])
async def test_non_string_path_is_refused(ws: Workspace, path: Any) -> None:
    with pytest.raises(UnsafePath):
        await ws.read_file(path, 10)


def test_longest_legal_paths_are_accepted() -> None:
    assert split_relative_path("a" * 255) == ("a" * 255,)
    legal = "/".join(["d" * 204] * 5)  # 1024 bytes exactly
    assert len(legal) == 1024
    assert len(split_relative_path(legal)) == 5


@settings(max_examples=300)
@given(path=st.text(alphabet=st.sampled_from("ab./\\\x00记 "), max_size=30))
def test_property_accepted_paths_have_only_plain_components(path: str) -> None:
    try:
        components = split_relative_path(path)
    except UnsafePath:
        return
    assert "/".join(components) == path
    for component in components:
        assert component not in ("", ".", "..")
        assert "\\" not in component and "\x00" not in component


# --- symlinks -----------------------------------------------------------------------------------


async def test_symlinked_target_is_refused(ws: Workspace, outside: Path) -> None:
    target = ws.directory / MEMORY_PATH
    target.unlink()
    target.symlink_to(outside)
    with pytest.raises(SymlinkRefused):
        await ws.replace_file(MEMORY_PATH, b"pwned")
    assert outside.read_bytes() == b"do not touch"
    assert target.is_symlink()
    assert temp_files(ws.directory / "agents") == []


async def test_symlinked_target_is_not_disclosed(ws: Workspace, outside: Path) -> None:
    target = ws.directory / MEMORY_PATH
    target.unlink()
    target.symlink_to(outside)
    with pytest.raises(SymlinkRefused):
        await ws.read_file(MEMORY_PATH, 1000)
    with pytest.raises(SymlinkRefused):
        await ws.read_file_prefix(MEMORY_PATH, 1000)
    with pytest.raises(SymlinkRefused):
        await ws.stat_file(MEMORY_PATH)


async def test_dangling_symlink_target_is_refused(ws: Workspace, tmp_path: Path) -> None:
    planted = tmp_path / "planted.txt"
    target = ws.directory / MEMORY_PATH
    target.unlink()
    target.symlink_to(planted)
    with pytest.raises(SymlinkRefused):
        await ws.replace_file(MEMORY_PATH, b"pwned")
    assert not planted.exists()


async def test_symlinked_agents_dir_is_refused(ws: Workspace, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "MEMORY.md").write_bytes(b"outside memory")
    shutil.rmtree(ws.directory / "agents")
    (ws.directory / "agents").symlink_to(elsewhere)
    with pytest.raises(SymlinkRefused):
        await ws.replace_file(MEMORY_PATH, b"pwned")
    with pytest.raises(SymlinkRefused):
        await ws.read_file(MEMORY_PATH, 1000)
    assert sorted(p.name for p in elsewhere.iterdir()) == ["MEMORY.md"]
    assert (elsewhere / "MEMORY.md").read_bytes() == b"outside memory"


async def test_symlinked_workspace_dir_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "workspaces"
    root.mkdir()
    ws = Workspace(root, "mallory")
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "agents").mkdir(parents=True)
    ws.directory.symlink_to(elsewhere)
    with pytest.raises(SymlinkRefused):
        await ws.replace_file(MEMORY_PATH, b"pwned")
    with pytest.raises(SymlinkRefused):
        await ws.ensure_user_workspace()
    with pytest.raises(SymlinkRefused):
        await ws.list_files()
    assert list((elsewhere / "agents").iterdir()) == []


async def test_symlinked_intermediate_dir_is_refused(ws: Workspace, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "sub").mkdir(parents=True)
    (ws.directory / "notes").symlink_to(elsewhere)
    with pytest.raises(SymlinkRefused):
        await ws.replace_file("notes/sub/x.md", b"pwned")
    assert list((elsewhere / "sub").iterdir()) == []


async def test_target_swapped_for_symlink_during_publish_is_not_written_through(
    memory: Path, ws: Workspace, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_rename = os.rename

    def swap_then_rename(src: str, dst: str, **kwargs: Any) -> None:
        memory.unlink()
        memory.symlink_to(outside)  # attacker wins the race after our lstat check
        real_rename(src, dst, **kwargs)

    monkeypatch.setattr(os, "rename", swap_then_rename)
    await ws.replace_file(MEMORY_PATH, NEW)
    assert outside.read_bytes() == b"do not touch"
    assert not memory.is_symlink()
    assert memory.read_bytes() == NEW


async def test_delete_does_not_follow_symlink(ws: Workspace, outside: Path) -> None:
    target = ws.directory / MEMORY_PATH
    target.unlink()
    target.symlink_to(outside)
    with pytest.raises(SymlinkRefused):
        await ws.delete_file(MEMORY_PATH)
    assert target.is_symlink()
    assert outside.read_bytes() == b"do not touch"


# --- non-regular files -------------------------------------------------------------------------


async def test_non_regular_target_is_refused_directory(ws: Workspace) -> None:
    target = ws.directory / MEMORY_PATH
    target.unlink()
    target.mkdir()
    (target / "inner").write_bytes(b"inner")
    with pytest.raises(NotARegularFile):
        await ws.replace_file(MEMORY_PATH, b"x")
    with pytest.raises(NotARegularFile):
        await ws.read_file(MEMORY_PATH, 100)
    with pytest.raises(NotARegularFile):
        await ws.delete_file(MEMORY_PATH)
    assert (target / "inner").read_bytes() == b"inner"
    assert temp_files(ws.directory / "agents") == []


async def test_non_regular_target_is_refused_fifo(ws: Workspace) -> None:
    target = ws.directory / MEMORY_PATH
    target.unlink()
    os.mkfifo(target)
    with pytest.raises(NotARegularFile):
        await ws.replace_file(MEMORY_PATH, b"x")
    # Must not block waiting for a FIFO writer.
    with pytest.raises(NotARegularFile):
        await asyncio.wait_for(ws.read_file_prefix(MEMORY_PATH, 100), timeout=5)
    with pytest.raises(NotARegularFile):
        await ws.stat_file(MEMORY_PATH)
    assert stat.S_ISFIFO(os.lstat(target).st_mode)
    assert temp_files(ws.directory / "agents") == []


async def test_file_in_directory_position_is_refused(memory: Path, ws: Workspace) -> None:
    with pytest.raises(UnsafePath):
        await ws.replace_file(MEMORY_PATH + "/child", b"x")
    with pytest.raises(UnsafePath):
        await ws.read_file(MEMORY_PATH + "/child", 10)
    assert memory.read_bytes() == OLD


async def test_target_turned_into_directory_before_rename_is_refused(
    memory: Path, ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_rename = os.rename

    def swap_then_rename(src: str, dst: str, **kwargs: Any) -> None:
        memory.unlink()
        memory.mkdir()
        (memory / "keep").write_bytes(b"k")
        real_rename(src, dst, **kwargs)

    monkeypatch.setattr(os, "rename", swap_then_rename)
    with pytest.raises(NotARegularFile):
        await ws.replace_file(MEMORY_PATH, NEW)
    assert (memory / "keep").read_bytes() == b"k"
    assert temp_files(memory.parent) == []


# --- publish failures ---------------------------------------------------------------------------


async def test_failed_rename_leaves_old_bytes_and_no_temp_file(
    memory: Path, ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_rename(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.EIO, "rename failed")

    monkeypatch.setattr(os, "rename", broken_rename)
    with pytest.raises(OSError, match="rename failed"):
        await ws.replace_file(MEMORY_PATH, NEW)
    assert memory.read_bytes() == OLD
    assert temp_files(memory.parent) == []


async def test_failed_temp_fsync_leaves_old_bytes_and_no_temp_file(
    memory: Path, ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        os, "fsync", fail_on_regular_fd(os.fsync, OSError(errno.EIO, "fsync failed"))
    )
    with pytest.raises(OSError, match="fsync failed"):
        await ws.replace_file(MEMORY_PATH, NEW)
    assert memory.read_bytes() == OLD
    assert temp_files(memory.parent) == []


async def test_failed_write_leaves_old_bytes_and_no_temp_file(
    memory: Path, ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_write = os.write
    calls = 0

    def write_then_fail(fd: int, data: Any) -> int:
        nonlocal calls
        calls += 1
        if calls == 1:
            return real_write(fd, bytes(data[:5]))  # partial write lands in the temp file
        raise OSError(errno.ENOSPC, "disk full")

    monkeypatch.setattr(os, "write", write_then_fail)
    with pytest.raises(StorageFull) as refused:
        await ws.replace_file(MEMORY_PATH, NEW)
    assert isinstance(refused.value.__cause__, OSError)
    assert refused.value.__cause__.errno == errno.ENOSPC
    assert calls == 2
    assert memory.read_bytes() == OLD
    assert temp_files(memory.parent) == []


async def test_write_without_progress_is_an_error_not_a_hang(
    memory: Path, ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "write", lambda fd, data: 0)
    with pytest.raises(OSError):
        await ws.replace_file(MEMORY_PATH, NEW)
    assert memory.read_bytes() == OLD
    assert temp_files(memory.parent) == []


async def test_interrupt_during_write_leaves_old_bytes_and_no_temp_file(
    memory: Path, ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(fd: int, data: Any) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "write", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ws.replace_file_sync(MEMORY_PATH, NEW)
    assert memory.read_bytes() == OLD
    assert temp_files(memory.parent) == []


async def test_partial_writes_are_completed(
    memory: Path, ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, bytes(data[:3])))
    await ws.replace_file(MEMORY_PATH, NEW)
    assert memory.read_bytes() == NEW


async def test_failed_temp_create_leaves_old_bytes_and_no_temp_file(
    memory: Path, ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_open = os.open

    def refuse_temp(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if isinstance(path, str) and is_temp_name(path):
            raise OSError(errno.EDQUOT, "quota exceeded")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse_temp)
    with pytest.raises(StorageFull):  # a used quota is a full disk to the writer
        await ws.replace_file(MEMORY_PATH, NEW)
    assert memory.read_bytes() == OLD
    assert temp_files(memory.parent) == []


async def test_temp_name_collision_does_not_delete_foreign_file(
    memory: Path, ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    foreign = ".MEMORY.md." + "f" * 32 + ".tmp"
    (memory.parent / foreign).write_bytes(b"someone else's")
    monkeypatch.setattr(publishing, "make_temp_name", lambda name: foreign)
    with pytest.raises(FileExistsError):
        await ws.replace_file(MEMORY_PATH, NEW)
    assert (memory.parent / foreign).read_bytes() == b"someone else's"
    assert memory.read_bytes() == OLD


async def test_failed_dir_fsync_after_rename_is_raised_with_data_published(
    memory: Path, ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rename already happened, so readers see the new bytes; the error tells the caller
    that durability across a crash is not assured. No temp file is left either way."""
    real_fsync = os.fsync

    def fail_on_dir(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EIO, "dir fsync failed")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fail_on_dir)
    with pytest.raises(OSError, match="dir fsync failed"):
        await ws.replace_file(MEMORY_PATH, NEW)
    monkeypatch.undo()
    assert memory.read_bytes() == NEW
    assert temp_files(memory.parent) == []


async def test_failed_cleanup_reraises_original_error_and_stale_temp_is_removable(
    memory: Path, ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_rename(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.EIO, "rename failed")

    def broken_unlink(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.EIO, "unlink failed")

    monkeypatch.setattr(os, "rename", broken_rename)
    monkeypatch.setattr(os, "unlink", broken_unlink)
    with pytest.raises(OSError, match="rename failed"):
        await ws.replace_file(MEMORY_PATH, NEW)
    monkeypatch.undo()
    assert memory.read_bytes() == OLD
    assert len(temp_files(memory.parent)) == 1
    assert await ws.cleanup_stale_temp_files() == 1
    assert temp_files(memory.parent) == []


# --- publish results ------------------------------------------------------------------------------


async def test_missing_agents_dir_is_recreated_0700(ws: Workspace) -> None:
    shutil.rmtree(ws.directory / "agents")
    await ws.replace_file(MEMORY_PATH, NEW)
    assert mode_of(ws.directory / "agents") == 0o700
    assert mode_of(ws.directory / MEMORY_PATH) == 0o600
    assert (ws.directory / MEMORY_PATH).read_bytes() == NEW


async def test_publish_into_missing_workspace_creates_owner_only_tree(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "workspaces", "carol")
    with umask(0o022):
        await ws.replace_file("notes/2024/plan.md", b"plan")
    for rel in ("", "notes", "notes/2024"):
        assert mode_of(ws.directory / rel) == 0o700
    assert mode_of(ws.directory / "notes/2024/plan.md") == 0o600


async def test_permissive_old_mode_is_replaced_by_0600(memory: Path, ws: Workspace) -> None:
    memory.chmod(0o666)
    with umask(0o000):
        await ws.replace_file(MEMORY_PATH, NEW)
    assert mode_of(memory) == 0o600


async def test_hard_link_to_old_file_keeps_old_bytes(
    memory: Path, ws: Workspace, tmp_path: Path
) -> None:
    link = tmp_path / "hardlink"
    os.link(memory, link)
    await ws.replace_file(MEMORY_PATH, NEW)
    assert link.read_bytes() == OLD
    assert memory.read_bytes() == NEW


async def test_publish_of_long_name_uses_short_enough_temp_name(ws: Workspace) -> None:
    name = "agents/" + "记" * 85  # 255 bytes: the temp name must be shortened
    await ws.replace_file(name, b"long")
    assert await ws.read_file(name, 10) == b"long"
    assert temp_files(ws.directory / "agents") == []


async def test_empty_content_round_trip(ws: Workspace) -> None:
    await ws.replace_file(MEMORY_PATH, b"")
    assert await ws.read_file(MEMORY_PATH, 0) == b""


async def test_non_bytes_data_is_refused(ws: Workspace) -> None:
    with pytest.raises(InvalidArgument):
        await ws.replace_file(MEMORY_PATH, "text")  # type: ignore[arg-type]


async def test_blocking_io_runs_off_the_event_loop_thread(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop_thread = threading.get_ident()
    seen: list[int] = []
    real_rename = os.rename

    def recording_rename(*args: Any, **kwargs: Any) -> None:
        seen.append(threading.get_ident())
        real_rename(*args, **kwargs)

    monkeypatch.setattr(os, "rename", recording_rename)
    await ws.replace_file(MEMORY_PATH, NEW)
    assert seen and all(ident != loop_thread for ident in seen)


async def test_concurrent_reader_sees_only_complete_old_or_new_bytes(
    memory: Path, ws: Workspace
) -> None:
    """A separate OS process publishes in a loop; every read is one complete version."""
    a, b = b"A" * 70_000, "记".encode() * 40_000
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from yuxi.workspace.filesystem import Workspace\n"
        "ws = Workspace(Path(sys.argv[1]), sys.argv[2])\n"
        "a, b = b'A' * 70_000, '记'.encode() * 40_000\n"
        "for i in range(200):\n"
        "    ws.replace_file_sync('agents/MEMORY.md', a if i % 2 else b)\n"
    )
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", script, str(ws.root), ws.uid)
    reads = 0
    try:
        while proc.returncode is None or reads == 0:
            data = await ws.read_file(MEMORY_PATH, 1 << 20)
            assert data in (OLD, a, b)
            reads += 1
    finally:
        await asyncio.wait_for(proc.wait(), timeout=60)
    assert proc.returncode == 0
    assert memory.read_bytes() == a
    assert temp_files(memory.parent) == []


async def test_concurrent_publishers_never_interleave(ws: Workspace) -> None:
    versions = [bytes([65 + i]) * (10_000 + i) for i in range(8)]
    await asyncio.gather(*(ws.replace_file(MEMORY_PATH, v) for v in versions for _ in range(5)))
    assert (ws.directory / MEMORY_PATH).read_bytes() in versions
    assert temp_files(ws.directory / "agents") == []


# --- reads --------------------------------------------------------------------------------------


async def test_read_prefix_truncation_flag_at_n_and_n_plus_one(ws: Workspace) -> None:
    data = b"0123456789"
    await ws.write_file(MEMORY_PATH, data)
    assert await ws.read_file_prefix(MEMORY_PATH, 10) == (data, False)
    assert await ws.read_file_prefix(MEMORY_PATH, 11) == (data, False)
    assert await ws.read_file_prefix(MEMORY_PATH, 9) == (data[:9], True)
    assert await ws.read_file_prefix(MEMORY_PATH, 0) == (b"", True)
    await ws.write_file(MEMORY_PATH, b"")
    assert await ws.read_file_prefix(MEMORY_PATH, 0) == (b"", False)


async def test_read_prefix_of_large_file_reads_bounded_amount(ws: Workspace) -> None:
    await ws.write_file(MEMORY_PATH, b"x" * (3 << 20))
    data, truncated = await ws.read_file_prefix(MEMORY_PATH, 24 * 1024)
    assert truncated and len(data) == 24 * 1024


async def test_read_file_too_large_at_n_plus_one(ws: Workspace) -> None:
    await ws.write_file(MEMORY_PATH, b"a" * 11)
    with pytest.raises(FileTooLarge):
        await ws.read_file(MEMORY_PATH, 10)
    assert await ws.read_file(MEMORY_PATH, 11) == b"a" * 11


@pytest.mark.parametrize("max_bytes", [-1, True, 1.5, "10"])
async def test_invalid_max_bytes_is_refused(ws: Workspace, max_bytes: Any) -> None:
    with pytest.raises(InvalidArgument):
        await ws.read_file(MEMORY_PATH, max_bytes)
    with pytest.raises(InvalidArgument):
        await ws.read_file_prefix(MEMORY_PATH, max_bytes)


async def test_missing_file_is_not_found(ws: Workspace) -> None:
    for path in ("agents/NOPE.md", "nodir/x.md"):
        with pytest.raises(WorkspaceFileNotFound):
            await ws.read_file(path, 10)
        with pytest.raises(WorkspaceFileNotFound):
            await ws.read_file_prefix(path, 10)
        with pytest.raises(WorkspaceFileNotFound):
            await ws.delete_file(path)
        assert await ws.stat_file(path) is None


async def test_missing_workspace_is_not_found_and_not_created(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "workspaces", "nobody")
    with pytest.raises(WorkspaceFileNotFound):
        await ws.read_file(MEMORY_PATH, 10)
    assert await ws.stat_file(MEMORY_PATH) is None
    assert await ws.list_files() == []
    assert await ws.cleanup_stale_temp_files() == 0
    assert not (tmp_path / "workspaces").exists()


async def test_cjk_content_round_trip(ws: Workspace) -> None:
    text = "## 记忆\n\n- 用户叫小明，住在上海。\n- 喜欢🍵和「简洁」的回答。\n"
    await ws.replace_file(MEMORY_PATH, text.encode())
    data = await ws.read_file(MEMORY_PATH, 1024)
    assert data.decode("utf-8") == text
    assert etag_for(data) == etag_for(text.encode())


def test_etag_is_strong_quoted_sha256() -> None:
    tag = etag_for(b"abc")
    assert tag == '"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"'
    assert etag_for(b"abd") != tag


@settings(max_examples=40, deadline=None)
@given(data=st.binary(max_size=5000))
def test_property_arbitrary_bytes_round_trip(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(Path(tmp), "prop")
        ws.replace_file_sync(MEMORY_PATH, data)
        assert ws.read_file_sync(MEMORY_PATH, len(data)) == data
        assert ws.read_file_prefix_sync(MEMORY_PATH, len(data)) == (data, False)


# --- delete / stat / list -------------------------------------------------------------------------


async def test_delete_removes_regular_file(memory: Path, ws: Workspace) -> None:
    await ws.delete_file(MEMORY_PATH)
    assert not memory.exists()
    with pytest.raises(WorkspaceFileNotFound):
        await ws.delete_file(MEMORY_PATH)


async def test_stat_reports_files_and_directories(memory: Path, ws: Workspace) -> None:
    entry = await ws.stat_file(MEMORY_PATH)
    assert entry == FileEntry(MEMORY_PATH, len(OLD), False, memory.stat().st_mtime)
    agents = await ws.stat_file("agents")
    assert agents is not None and agents.is_dir and agents.size == 0


async def test_list_files_skips_symlinks_temp_files_and_specials(
    ws: Workspace, outside: Path
) -> None:
    agents = ws.directory / "agents"
    (agents / "link.md").symlink_to(outside)
    (agents / "dirlink").symlink_to(outside.parent)
    (agents / (".MEMORY.md." + "a" * 32 + ".tmp")).write_bytes(b"tmp")
    os.mkfifo(agents / "fifo")
    (agents / "back\\slash.md").write_bytes(b"unaddressable")
    await ws.write_file("agents/notes/n.md", b"note")
    entries = await ws.list_files("agents")
    assert [e.path for e in entries] == [
        AGENTS_PATH,
        MEMORY_PATH,
        USER_PATH,
        "agents/notes",
    ]
    assert all(isinstance(e, FileEntry) for e in entries)


async def test_list_files_recursive_does_not_descend_symlinks(
    ws: Workspace, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "secret.md").write_bytes(b"s")
    (ws.directory / "agents" / "escape").symlink_to(elsewhere)
    await ws.write_file("notes/a/b.md", b"b")
    paths = [e.path for e in await ws.list_files(recursive=True)]
    assert paths == [
        "agents",
        AGENTS_PATH,
        MEMORY_PATH,
        USER_PATH,
        "notes",
        "notes/a",
        "notes/a/b.md",
    ]
    assert not any("secret" in p for p in paths)


async def test_list_through_symlinked_dir_is_refused(ws: Workspace, tmp_path: Path) -> None:
    (ws.directory / "linked").symlink_to(tmp_path)
    with pytest.raises(SymlinkRefused):
        await ws.list_files("linked")
    with pytest.raises(WorkspaceFileNotFound):
        await ws.list_files("missing")


# --- stale temp cleanup --------------------------------------------------------------------------


async def test_cleanup_stale_temp_files_after_crash(
    memory: Path, ws: Workspace, outside: Path
) -> None:
    agents = memory.parent
    stale = agents / (".MEMORY.md." + "0" * 32 + ".tmp")
    fresh = agents / (".USER.md." + "1" * 32 + ".tmp")
    looks_like = agents / ".MEMORY.md.tmp"  # not our pattern: never removed
    link = agents / (".AGENTS.md." + "2" * 32 + ".tmp")
    for path in (stale, fresh, looks_like):
        path.write_bytes(b"partial")
    link.symlink_to(outside)
    old = time.time() - 3600
    os.utime(stale, (old, old))
    assert await ws.cleanup_stale_temp_files(older_than_seconds=60) == 1
    assert not stale.exists() and fresh.exists()
    assert await ws.cleanup_stale_temp_files() == 1
    assert not fresh.exists()
    assert looks_like.exists() and link.is_symlink()
    assert outside.read_bytes() == b"do not touch"
    assert memory.read_bytes() == OLD


async def test_cleanup_refuses_symlinked_directory(ws: Workspace, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    planted = elsewhere / (".x." + "3" * 32 + ".tmp")
    planted.write_bytes(b"victim")
    (ws.directory / "linked").symlink_to(elsewhere)
    with pytest.raises(SymlinkRefused):
        await ws.cleanup_stale_temp_files("linked")
    assert planted.exists()


def test_if_match_uses_the_strong_comparison() -> None:
    from yuxi.workspace.filesystem import etag_for, if_match_allows

    tag = etag_for(b"memory")
    assert if_match_allows(tag, tag)
    assert if_match_allows(f'"other", {tag}', tag)
    assert if_match_allows("*", tag) and if_match_allows(None, tag)
    # RFC 9110 §13.1.1: a weak tag never matches, even with an equal opaque part.
    assert not if_match_allows("W/" + tag, tag)
    assert not if_match_allows(f'W/"x", W/{tag}', tag)
    assert not if_match_allows('"stale"', tag)
