"""One contract, two backends: the real ``MemoryService`` (real PostgreSQL) and ``FakeMemory``.

The agent unit tests trust ``FakeMemory`` to behave like the service; these tests are what
earns that trust. Every test runs against both, through the tool adapter (the payload the model
would see): the snapshot (missing, blank, CJK cut at 24 KiB on a character boundary with the
note, invalid UTF-8), the switch (off → ``None`` without opening the file; off → a refused
write) and ``remember_memory``'s add / dedupe / replace / refusal semantics, with the
``version_id`` and ``quota_remaining`` of its results.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from tests.support.agent_fakes import CTX, FakeMemory, SpyWorkspace
from tests.support.factories import make_run, make_user, memory_file, set_memory, tool_payload
from yuxi.agents.ports import MemoryPort
from yuxi.bootstrap import Container
from yuxi.identity import RunIdentity
from yuxi.limits import MEMORY_FILE_MAX_BYTES, MEMORY_PROMPT_MAX_BYTES
from yuxi.services.memory.service import PROMPT_TRUNCATION_NOTE
from yuxi.workspace.filesystem import Workspace


@dataclass
class Backend:
    memory: MemoryPort
    identity: RunIdentity
    file: Path
    set_enabled: Callable[[bool], Awaitable[None]]

    @property
    def uid(self) -> str:
        return self.identity.uid

    async def remember(self, content: object, replaces: object = None) -> dict[str, Any]:
        return await tool_payload(
            lambda: self.memory.remember_memory(self.identity, content, replaces)
        )


@pytest.fixture(params=["service", "fake"])
def container_or_none(request: pytest.FixtureRequest) -> Container | None:
    """The real container for the ``service`` backend; no database for the ``fake`` one."""
    if request.param == "service":
        container: Container = request.getfixturevalue("container")
        return container
    return None


@pytest.fixture
async def backend(container_or_none: Container | None, tmp_path: Path) -> Backend:
    container = container_or_none
    if container is not None:
        uid = await make_user(container)
        run = await make_run(container, uid)

        async def set_enabled_in_db(enabled: bool) -> None:
            await set_memory(container, uid, enabled)

        return Backend(
            container.services.memory, run, memory_file(container, uid), set_enabled_in_db
        )
    workspace = SpyWorkspace(tmp_path / "workspaces")
    workspace.ensure_user_workspace_sync()
    fake = FakeMemory(workspace)

    async def set_enabled_flag(enabled: bool) -> None:
        fake.enabled = enabled

    return Backend(fake, CTX, workspace.directory / "agents" / "MEMORY.md", set_enabled_flag)


def _sha(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


# -- the snapshot -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content", [None, "", "  \n\t\n", b"fine\n\xff\xfe\n"], ids=["missing", "empty", "blank", "bad"]
)
async def test_missing_blank_or_invalid_memory_is_no_memory(
    backend: Backend, content: str | bytes | None
) -> None:
    if content is None:
        backend.file.unlink(missing_ok=True)
    elif isinstance(content, bytes):
        backend.file.write_bytes(content)
    else:
        backend.file.write_text(content)
    snapshot = await backend.memory.load_memory_snapshot(backend.uid)
    assert snapshot is not None
    assert (snapshot.text, snapshot.size, snapshot.truncated) == ("", 0, False)
    assert snapshot.sha256 == hashlib.sha256(b"").hexdigest()


async def test_snapshot_text_and_fingerprint(backend: Backend) -> None:
    backend.file.write_text("喝乌龙茶\n")
    snapshot = await backend.memory.load_memory_snapshot(backend.uid)
    assert snapshot is not None and snapshot.text == "喝乌龙茶\n" and not snapshot.truncated
    assert snapshot.size == len("喝乌龙茶\n".encode())
    assert snapshot.sha256 == hashlib.sha256("喝乌龙茶\n".encode()).hexdigest()


@pytest.mark.parametrize("extra", [0, 1, 2])
async def test_cjk_cut_at_24_kib_on_a_character_boundary(backend: Backend, extra: int) -> None:
    body = "a" * extra + "记" * 8192  # 24576 bytes + extra: the cut lands inside a character
    backend.file.write_text(body)
    snapshot = await backend.memory.load_memory_snapshot(backend.uid)
    assert snapshot is not None
    if extra == 0:
        assert snapshot.text == body and not snapshot.truncated
        return
    assert snapshot.truncated and snapshot.text.endswith(PROMPT_TRUNCATION_NOTE)
    shown = snapshot.text.removesuffix(PROMPT_TRUNCATION_NOTE)
    assert body.startswith(shown) and "\ufffd" not in shown
    assert MEMORY_PROMPT_MAX_BYTES - 3 < len(shown.encode()) <= MEMORY_PROMPT_MAX_BYTES
    assert snapshot.size == len(snapshot.text.encode())


async def test_switch_off_is_none_without_opening_the_file(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend.file.write_text("SECRET-OFF-MARKER\n")
    await backend.set_enabled(False)

    async def forbidden(*args: object, **kwargs: object) -> object:
        raise AssertionError("MEMORY.md was opened while memory is off")

    monkeypatch.setattr(Workspace, "read_file_prefix", forbidden)
    monkeypatch.setattr(Workspace, "read_file", forbidden)
    assert await backend.memory.load_memory_snapshot(backend.uid) is None


# -- remember_memory ----------------------------------------------------------------------------


async def test_add_creates_then_appends_and_dedupes(backend: Backend) -> None:
    backend.file.unlink(missing_ok=True)
    first = await backend.remember("  I drink oolong tea  ")
    version_id = first.pop("version_id")
    assert re.fullmatch(r"mv_[0-9a-f]{32}", version_id)
    assert first == {
        "status": "updated",
        "path": "/agents/MEMORY.md",
        "size": len(b"I drink oolong tea\n"),
        "start_line": 1,
        "end_line": 1,
        "quota_remaining": {"writes": 4, "bytes": 8192 - len(b"I drink oolong tea")},
    }
    second = await backend.remember("Lives in 杭州\nPrefers 中文")
    text = backend.file.read_text("utf-8")
    assert text == "I drink oolong tea\n\nLives in 杭州\nPrefers 中文\n"
    assert (second["status"], second["start_line"], second["end_line"]) == ("updated", 3, 4)
    assert second["size"] == len(text.encode())
    before = _sha(backend.file)
    again = await backend.remember("Lives   in 杭州\nPrefers 中文")
    assert (again["status"], again["start_line"], again["end_line"]) == ("unchanged", 3, 4)
    assert "version_id" not in again  # nothing changed, nothing recorded
    assert again["quota_remaining"] == second["quota_remaining"]  # and nothing was spent
    assert _sha(backend.file) == before
    fragment = await backend.remember("oolong tea")  # a fragment of a longer line is new
    assert fragment["status"] == "updated"


async def test_replace_the_unique_exact_text(backend: Backend) -> None:
    backend.file.write_text("line one\n\nI drink oolong tea\n")
    result = await backend.remember("pu-erh", replaces="oolong")
    assert (result["status"], result["start_line"], result["end_line"]) == ("updated", 3, 3)
    assert backend.file.read_text() == "line one\n\nI drink pu-erh tea\n"


@pytest.mark.parametrize(
    ("file_text", "replaces"),
    [("tea and tea\n", "tea"), ("aaa\n", "aa"), ("Tea\n", "tea"), ("", "anything")],
    ids=["twice", "overlapping", "case-sensitive-miss", "empty-file"],
)
async def test_replace_conflicts_leave_the_file(
    backend: Backend, file_text: str, replaces: str
) -> None:
    backend.file.write_text(file_text)
    before = _sha(backend.file)
    result = await backend.remember("new", replaces=replaces)
    assert (result["status"], result["code"]) == ("error", "memory_conflict")
    assert _sha(backend.file) == before


@pytest.mark.parametrize(
    ("content", "replaces", "code"),
    [
        ("", None, "invalid_argument"),
        ("bad \ud800", None, "invalid_argument"),
        ("记" * 1365 + "ab", None, "invalid_argument"),  # 4097 bytes
        ("fine", "a\x00", "invalid_argument"),
        (42, None, "invalid_argument"),
    ],
    ids=["blank", "surrogate", "4097-bytes", "replaces-nul", "not-a-string"],
)
async def test_refusals_leave_the_file(
    backend: Backend, content: object, replaces: object, code: str
) -> None:
    backend.file.write_text("existing\n")
    before = _sha(backend.file)
    result = await backend.remember(content, replaces)
    assert (result["status"], result["code"]) == ("error", code)
    assert _sha(backend.file) == before


async def test_file_state_refusals(backend: Backend) -> None:
    backend.file.write_bytes(b"ok line\n\xff\xfe broken\n")
    assert (await backend.remember("new fact"))["code"] == "memory_invalid_encoding"
    backend.file.write_bytes(b"y" * (MEMORY_FILE_MAX_BYTES + 1))
    assert (await backend.remember("small"))["code"] == "memory_too_large"
    backend.file.write_bytes(b"z" * (MEMORY_FILE_MAX_BYTES - 4))
    assert (await backend.remember("ab"))["code"] == "memory_too_large"
    assert (await backend.remember("a"))["size"] == MEMORY_FILE_MAX_BYTES


async def test_switch_off_and_subagent_identities_may_not_write(backend: Backend) -> None:
    backend.file.write_text("original\n")
    before = _sha(backend.file)
    subagent = await tool_payload(
        lambda: backend.memory.remember_memory(replace(backend.identity, worker_id=None), "x")
    )
    assert subagent["code"] == "unauthorized_run"
    await backend.set_enabled(False)
    assert (await backend.remember("poison"))["code"] == "memory_disabled"
    assert _sha(backend.file) == before
