"""R7 storage: a full disk and a read-only data dir, over HTTP and to the model (issue 29 item 3).

The data dir is a small filesystem the test mounts (a tmpfs, when the machine lets it: root and
``mount`` allowed) or a plain directory with the fault injected at the OS-call seam (``os.write``
failing with ``ENOSPC`` for files under the data dir; ``os.open`` for writing, ``mkdir``,
``unlink`` and ``rename`` there failing with ``EROFS``). The seam variant always runs; the small
filesystem is skipped, saying why, where it cannot be mounted.

One user, one in-process app (``create_app``; ``httpx`` over ASGI) and one worker with the
offline model. While the fault holds, every write path is tried: a workspace ``PUT`` (of an
existing and of a new file), the owner's ``PUT`` of MEMORY.md and undo of a version, an agent's
``remember_memory`` and an approved ``write_workspace_file``.
Asserted: HTTP 507 with ``storage_full`` / ``storage_read_only``; the same code in the model's
tool result (and the run still completes); every file's sha256 unchanged; the number of memory
versions unchanged; no ``.*.tmp`` left anywhere in the data dir; reads (a file ``GET``, the
memory view, the versions) still answer 200. Then the fault clears and the same writes succeed,
in the same app and worker, without a restart. ``YUXI_SOAK`` repeats the cycle.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import os
import subprocess
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.reliability.support import LARGEST_MEMORY_QUOTA, TIMEOUT, report, scale
from tests.support.server import create_user_with_token
from yuxi.api.app import create_app
from yuxi.bootstrap import Container, build_worker, open_agent_runtime
from yuxi.runtime.worker import Worker
from yuxi.settings import Settings
from yuxi.workspace import is_temp_name

pytestmark = [pytest.mark.pg, pytest.mark.slow, TIMEOUT]

SMALL_FS_BYTES = 8 * 1024 * 1024
CODES = {"full": "storage_full", "read_only": "storage_read_only"}
MEMORY = "agents/MEMORY.md"


# -- the data dir: a small filesystem, or a plain directory and the seam ---------------------


@functools.cache
def _mount_refused() -> str | None:
    """Why a tmpfs cannot be mounted here (``None``: it can)."""
    if os.geteuid() != 0:
        return "not root"
    with tempfile.TemporaryDirectory() as probe:
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", probe],
            capture_output=True,
            text=True,
        )
        if mounted.returncode != 0:
            return f"mount refused: {mounted.stderr.strip()}"
        subprocess.run(["umount", probe], check=True)
    return None


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True)


@dataclass
class SmallFilesystem:
    """A tmpfs of ``SMALL_FS_BYTES`` at ``path``: filled with a filler file, or remounted
    read-only; cleared by deleting the filler, or remounting read-write."""

    path: Path
    mechanism: str = "small_filesystem"

    def start(self, kind: str) -> None:
        if kind == "read_only":
            _mount("-o", "remount,ro", str(self.path))
            return
        fd = os.open(self.path / "filler", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        chunk = b"\0" * 65536
        try:
            while True:
                os.write(fd, chunk)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
        finally:
            os.close(fd)

    def stop(self, kind: str) -> None:
        if kind == "read_only":
            _mount("-o", "remount,rw", str(self.path))
        else:
            (self.path / "filler").unlink()


def _in(root: Path, path: Any, dir_fd: int | None) -> str | None:
    """The full path ``path`` (relative to ``dir_fd`` when given) names, if under ``root``."""
    base = os.readlink(f"/proc/self/fd/{dir_fd}") if dir_fd is not None else os.getcwd()
    full = os.path.join(base, os.fsdecode(path))
    return full if full == str(root) or full.startswith(str(root) + os.sep) else None


def _read_only_refuses(call: str, flags: int, exists: bool) -> bool:
    """Whether a read-only mount refuses this call with ``EROFS``, in Linux's order of checks:
    an existing name is ``EEXIST`` to ``mkdir`` and ``O_CREAT|O_EXCL`` first."""
    if call == "mkdir":
        return not exists
    if call == "open":
        if flags & os.O_CREAT and flags & os.O_EXCL and exists:
            return False
        return bool(flags & (os.O_WRONLY | os.O_RDWR)) or bool(flags & os.O_CREAT and not exists)
    return True  # unlink, rename


@dataclass
class Seam:
    """The OS calls the workspace makes, failing for the data dir only (the rest of the
    process, its sockets and pipes included, is left alone), as the kernel fails them: a full
    disk refuses the bytes of a write; a read-only mount refuses opening for writing, creating,
    ``mkdir`` (an existing name is still ``EEXIST``), ``unlink`` and ``rename``."""

    path: Path
    mechanism: str = "seam"
    patch: pytest.MonkeyPatch = field(default_factory=pytest.MonkeyPatch)

    def start(self, kind: str) -> None:
        root = self.path
        if kind == "full":
            real_write = os.write

            def write(fd: int, data: Any) -> int:
                if _in(root, os.readlink(f"/proc/self/fd/{fd}"), None):
                    raise OSError(errno.ENOSPC, "No space left on device")
                return real_write(fd, data)

            self.patch.setattr(os, "write", write)
            return

        def refuse(name: str) -> Any:
            real = getattr(os, name)

            def call(path: Any, *args: Any, **kwargs: Any) -> Any:
                full = _in(root, path, kwargs.get("dir_fd", kwargs.get("src_dir_fd")))
                flags = args[0] if name == "open" else 0
                if full and _read_only_refuses(name, flags, os.path.lexists(full)):
                    raise OSError(errno.EROFS, "Read-only file system")
                return real(path, *args, **kwargs)

            return call

        for name in ("open", "mkdir", "unlink", "rename"):
            self.patch.setattr(os, name, refuse(name))

    def stop(self, kind: str) -> None:
        self.patch.undo()


Fault = SmallFilesystem | Seam


@pytest.fixture(params=["small_filesystem", "seam"])
def fault(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Fault]:
    path = tmp_path / "data"
    path.mkdir()
    if request.param == "seam":
        seam = Seam(path)
        yield seam
        seam.patch.undo()
        return
    refused = _mount_refused()
    if refused is not None:
        pytest.skip(f"no small filesystem on this machine ({refused}); the seam variant runs")
    _mount("-t", "tmpfs", "-o", f"size={SMALL_FS_BYTES},mode=0700", "tmpfs", str(path))
    try:
        yield SmallFilesystem(path)
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(path)], capture_output=True)
        subprocess.run(["umount", str(path)], check=True)


@pytest.fixture
def settings(database_url: str, fault: Fault) -> Settings:
    return Settings(database_url=database_url, data_dir=fault.path, **LARGEST_MEMORY_QUOTA)


@pytest.fixture
async def worker(container: Container) -> AsyncIterator[Worker]:
    async with open_agent_runtime(container) as runtime:
        yield build_worker(container, runtime, name="r7-worker")


# -- one user over HTTP ------------------------------------------------------------------------


@dataclass
class User:
    client: httpx.AsyncClient
    worker: Worker
    directory: Path

    async def put(self, path: str, text: str) -> httpx.Response:
        url = f"/api/v1/workspace/files/{path}"
        headers = {"Content-Type": "text/plain; charset=utf-8"}
        if path == MEMORY:
            current = await self.client.get(url)
            assert current.status_code == 200, current.text
            headers["If-Match"] = current.headers["ETag"]
        return await self.client.put(url, content=text.encode(), headers=headers)

    async def thread(self) -> str:
        created = await self.client.post("/api/v1/threads", json={"title": "r7"})
        assert created.status_code == 201, created.text
        return str(created.json()["thread_id"])

    async def run(self, thread: str, text: str) -> dict[str, Any]:
        posted = await self.client.post(f"/api/v1/threads/{thread}/runs", json={"input": text})
        assert posted.status_code == 202, posted.text
        return await self._settled(posted.json()["run_id"])

    async def approve(self, run_id: str) -> dict[str, Any]:
        resumed = await self.client.post(
            f"/api/v1/runs/{run_id}/resume", json={"decision": "approve"}
        )
        assert resumed.status_code == 202, resumed.text
        return await self._settled(resumed.json()["run_id"])

    async def _settled(self, run_id: str) -> dict[str, Any]:
        assert await self.worker.run_once()
        run = await self.client.get(f"/api/v1/runs/{run_id}")
        assert run.status_code == 200, run.text
        return dict(run.json())

    async def tool_result(self, thread: str, tool: str) -> str:
        """The newest result of ``tool`` in the thread, as the model read it."""
        view = (await self.client.get(f"/api/v1/threads/{thread}")).json()
        calls = [c for m in view["messages"] for c in m["tool_calls"] if c["name"] == tool]
        assert calls, view
        return str(calls[-1]["result"])

    async def versions(self) -> int:
        listed = await self.client.get("/api/v1/memory/versions")
        assert listed.status_code == 200, listed.text
        return len(listed.json()["versions"])

    def hashes(self) -> dict[str, str]:
        return {
            str(p.relative_to(self.directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(self.directory.rglob("*"))
            if p.is_file()
        }


def _temps(root: Path) -> list[Path]:
    return [p for p in root.rglob(".*") if is_temp_name(p.name)]


@pytest.fixture
async def user(container: Container, worker: Worker) -> AsyncIterator[User]:
    uid, token = await create_user_with_token(container, "r7-storage")
    await container.services.users.set_memory_enabled(uid, True)
    app = create_app(container, workers=0)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://yuxi.test",
        headers={"Authorization": f"Bearer {token}"},
    ) as client:
        yield User(client, worker, container.workspace(uid).directory)


# -- the test ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["full", "read_only"])
async def test_refused_writes_change_nothing_and_recover_without_a_restart(
    kind: str, fault: Fault, user: User
) -> None:
    code = CODES[kind]
    refused = 0
    for cycle in range(scale(1, 5)):
        mark = f"r7-{cycle}-{uuid.uuid4().hex[:8]}"
        # Before the fault: a memory entry, two files, and an agent's write awaiting approval.
        remembered = await user.thread()
        for entry in ("base", "old"):  # two entries: undoing the newest still writes bytes
            done = await user.run(remembered, f"remember: {entry} {mark}")
            assert done["status"] == "completed", done
        for path in ("notes/a.md", "notes/b.md", "notes/scratch.md"):
            assert (await user.put(path, f"old {mark} 旧")).status_code == 204
        approval = await user.thread()
        paused = await user.run(approval, f"write file notes/b.md: new {mark} 新")
        assert paused["status"] == "interrupted", paused
        before, versions = user.hashes(), await user.versions()

        fault.start(kind)
        try:
            for path in ("notes/a.md", MEMORY, f"notes/new-{mark}.md"):
                answer = await user.put(path, f"new {mark} 新")
                assert answer.status_code == 507, answer.text
                assert answer.json()["error"]["code"] == code, answer.text
                refused += 1
            newest = (await user.client.get("/api/v1/memory/versions")).json()["versions"][0]
            undo = await user.client.post(f"/api/v1/memory/versions/{newest['version_id']}/undo")
            assert undo.status_code == 507, undo.text
            assert undo.json()["error"]["code"] == code, undo.text
            done = await user.run(remembered, f"remember: new {mark}")
            assert done["status"] == "completed", done
            assert f'"code":"{code}"' in await user.tool_result(remembered, "remember_memory")
            done = await user.approve(paused["run_id"])
            assert done["status"] == "completed", done
            assert f'"code":"{code}"' in await user.tool_result(approval, "write_workspace_file")
            refused += 3
            # Reads go on while the fault holds.
            read = await user.client.get("/api/v1/workspace/files/notes/a.md")
            assert (read.status_code, read.text) == (200, f"old {mark} 旧")
            view = await user.client.get("/api/v1/memory")
            assert view.status_code == 200, view.text
            assert f"old {mark}" in view.text and f"new {mark}" not in view.text
            assert await user.versions() == versions
            assert user.hashes() == before
            assert _temps(fault.path) == []
            # A delete needs no space: a full disk lets it through, a read-only one does not.
            deleted = await user.client.delete("/api/v1/workspace/files/notes/scratch.md")
            assert deleted.status_code == (204 if kind == "full" else 507), deleted.text
            assert (user.directory / "notes" / "scratch.md").exists() == (kind == "read_only")
        finally:
            fault.stop(kind)

        # Space (or writability) is back: the same writes succeed, same app, same worker.
        for path in ("notes/a.md", MEMORY, f"notes/new-{mark}.md"):
            assert (await user.put(path, f"new {mark} 新")).status_code == 204
        assert (await user.run(remembered, f"remember: again {mark}"))["status"] == "completed"
        assert '"status":"updated"' in await user.tool_result(remembered, "remember_memory")
        retried = await user.run(approval, f"write file notes/b.md: new {mark} 新")
        assert retried["status"] == "interrupted", retried
        assert (await user.approve(retried["run_id"]))["status"] == "completed"
        assert (user.directory / "notes" / "b.md").read_text() == f"new {mark} 新"
        assert await user.versions() == versions + 2  # the owner's PUT and remember_memory
        assert _temps(fault.path) == []
    report(
        f"R7 storage {kind} ({fault.mechanism})",
        cycles=scale(1, 5),
        refused_writes=refused,
        code=code,
    )
