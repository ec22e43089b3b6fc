"""The read side: load_memory_prompt / load_memory_snapshot."""

from __future__ import annotations

import hashlib

import pytest

from tests.support.factories import make_user, memory_file
from yuxi.bootstrap import Container
from yuxi.limits import MEMORY_PROMPT_MAX_BYTES
from yuxi.services.memory.service import PROMPT_TRUNCATION_NOTE
from yuxi.workspace.filesystem import Workspace


async def test_switch_off_returns_none_and_never_opens_the_file(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    uid = await make_user(container, memory=False)
    memory_file(container, uid).write_text("SECRET-OFF-MARKER\n")

    async def forbidden(*args: object, **kwargs: object) -> object:
        raise AssertionError("MEMORY.md was opened while memory is off")

    monkeypatch.setattr(Workspace, "read_file_prefix", forbidden)
    monkeypatch.setattr(Workspace, "read_file", forbidden)
    assert await container.services.memory.load_memory_prompt(uid) is None
    assert await container.services.memory.load_memory_snapshot(uid) is None


async def test_user_without_config_row_is_off(container: Container) -> None:
    assert await container.services.memory.load_memory_prompt("u_nobody") is None


@pytest.mark.parametrize("content", [None, "", "  \n\t\n"], ids=["missing", "empty", "blank"])
async def test_missing_or_blank_file_is_no_memory(
    container: Container, content: str | None
) -> None:
    uid = await make_user(container)
    path = memory_file(container, uid)
    if content is None:
        path.unlink()
    else:
        path.write_text(content)
    assert await container.services.memory.load_memory_prompt(uid) == ""


async def test_snapshot_fingerprint(container: Container) -> None:
    uid = await make_user(container)
    memory_file(container, uid).write_text("喝乌龙茶\n")
    snap = await container.services.memory.load_memory_snapshot(uid)
    assert snap is not None and snap.text == "喝乌龙茶\n"
    assert snap.size == len("喝乌龙茶\n".encode()) and not snap.truncated
    assert snap.sha256 == hashlib.sha256("喝乌龙茶\n".encode()).hexdigest()


@pytest.mark.parametrize("extra", [0, 1, 2])
async def test_24_kib_cut_on_a_character_boundary(container: Container, extra: int) -> None:
    uid = await make_user(container)
    # 8192 CJK chars = 24576 bytes exactly; shift by `extra` ASCII bytes so the cut lands
    # inside a 3-byte character.
    body = "a" * extra + "记" * 8192
    memory_file(container, uid).write_text(body)
    snap = await container.services.memory.load_memory_snapshot(uid)
    assert snap is not None
    if extra == 0:
        assert snap.text == body and not snap.truncated
        return
    assert snap.truncated
    assert snap.text.endswith(PROMPT_TRUNCATION_NOTE)
    shown = snap.text.removesuffix(PROMPT_TRUNCATION_NOTE)
    assert "\ufffd" not in shown
    assert body.startswith(shown)
    assert len(shown.encode()) <= MEMORY_PROMPT_MAX_BYTES
    assert len(shown.encode()) > MEMORY_PROMPT_MAX_BYTES - 3


async def test_invalid_utf8_is_not_injected(container: Container) -> None:
    uid = await make_user(container)
    memory_file(container, uid).write_bytes(b"fine\n\xff\xfe\n")
    assert await container.services.memory.load_memory_prompt(uid) == ""
