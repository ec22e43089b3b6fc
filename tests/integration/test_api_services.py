"""The services behind the HTTP API and the CLI, on a real PostgreSQL: users and tokens, the
owner rules of threads and runs, and the If-Match rules of workspace files."""

from __future__ import annotations

import asyncio
import hashlib

import pytest

from tests.support.factories import make_user, sql
from yuxi.api.errors import status_for
from yuxi.bootstrap import Container
from yuxi.errors import (
    Conflict,
    InvalidArgument,
    NotFound,
    PreconditionFailed,
    PreconditionRequired,
    Unauthorized,
    WorkspaceFileNotFound,
)
from yuxi.workspace.filesystem import etag_for

# -- users and tokens ------------------------------------------------------------------------


async def test_created_user_authenticates_and_has_a_workspace(container: Container) -> None:
    users = container.services.users
    created = await users.create_user("ada")
    assert created.token.startswith("yx_")
    assert await users.authenticate(created.token) == created.uid
    assert (await users.get_user(created.uid)).name == "ada"
    assert (container.workspace(created.uid).directory / "agents" / "MEMORY.md").is_file()
    assert await users.memory_enabled(created.uid) is False  # fail closed


@pytest.mark.parametrize("token", ["", "yx_nope", "yx_" + "a" * 300, "yx_é", "\x00"])
async def test_a_bad_token_is_unauthorized(container: Container, token: str) -> None:
    await container.services.users.create_user("someone")
    with pytest.raises(Unauthorized):
        await container.services.users.authenticate(token)


async def test_unknown_user_is_not_found(container: Container) -> None:
    with pytest.raises(NotFound):
        await container.services.users.get_user("u_nobody")


async def test_turning_memory_on_initialises_the_workspace(container: Container) -> None:
    users = container.services.users
    created = await users.create_user("bo")
    agents = container.workspace(created.uid).directory / "agents"
    for name in ("MEMORY.md", "AGENTS.md", "USER.md"):
        (agents / name).unlink()
    assert await users.set_memory_enabled(created.uid, True) is True
    assert await users.memory_enabled(created.uid) is True
    assert (
        await container.services.memory.memory_enabled(created.uid) is True
    )  # the agent's read agrees
    assert (agents / "MEMORY.md").is_file()
    assert await users.set_memory_enabled(created.uid, False) is False
    assert await users.memory_enabled(created.uid) is False


# -- threads and runs ------------------------------------------------------------------------


async def test_another_users_thread_is_not_found(container: Container) -> None:
    chat = container.services.chat
    owner, stranger = await make_user(container), await make_user(container)
    thread = (await chat.create_thread(owner, title="mine")).thread_id
    for attempt in (
        chat.get_thread(stranger, thread),
        chat.archive_thread(stranger, thread),
        chat.unarchive_thread(stranger, thread),
        chat.delete_thread(stranger, thread),
        chat.thread_runs(stranger, thread),
        chat.submit(stranger, thread, "hello"),
    ):
        with pytest.raises(NotFound):
            await attempt
    assert [t.thread_id for t in await chat.list_threads(stranger)] == []
    assert (await chat.get_thread(owner, thread)).status == "active"


async def test_archive_unarchive_delete(container: Container) -> None:
    chat = container.services.chat
    uid = await make_user(container)
    thread = await chat.create_thread(uid, title="t")
    archived = await chat.archive_thread(uid, thread.thread_id)
    assert archived.status == "archived" and archived.updated_at >= thread.updated_at
    assert await chat.list_threads(uid) == []
    assert [t.status for t in await chat.list_threads(uid, include_archived=True)] == ["archived"]
    with pytest.raises(Conflict):
        await chat.submit(uid, thread.thread_id, "hello")
    assert (await chat.unarchive_thread(uid, thread.thread_id)).status == "active"
    run, created = await chat.submit(uid, thread.thread_id, "hello there")
    assert created
    detail = await chat.get_thread(uid, thread.thread_id)
    assert [(m.role, m.content, m.run_id) for m in detail.messages] == [
        ("user", "hello there", run.id)
    ]
    assert [r.id for r in await chat.thread_runs(uid, thread.thread_id)] == [run.id]
    await chat.delete_thread(uid, thread.thread_id)
    with pytest.raises(NotFound):
        await chat.get_thread(uid, thread.thread_id)
    with pytest.raises(NotFound):
        await chat.delete_thread(uid, thread.thread_id)


async def test_agent_call_is_idempotent_and_leaves_one_thread(container: Container) -> None:
    chat = container.services.chat
    uid = await make_user(container)
    first, created = await chat.submit_agent_call(uid, "one shot", request_id="req-1")
    again, created_again = await chat.submit_agent_call(uid, "one shot", request_id="req-1")
    assert created and not created_again and again.id == first.id
    await sql(container, "UPDATE agent_runs SET status = 'completed' WHERE id = :id", id=first.id)
    with pytest.raises(InvalidArgument):
        await chat.submit_agent_call(uid, "x", source="chat")
    with pytest.raises(InvalidArgument):
        await chat.submit_agent_call(uid, "   ")
    async with container.uow() as uow:
        threads = await uow.threads.list_conversations(uid, sources=("agent_call",))
    assert [t.thread_id for t in threads] == [first.conversation_thread_id]


# -- workspace files -------------------------------------------------------------------------


def _sha(container: Container, uid: str, path: str) -> str:
    return hashlib.sha256((container.workspace(uid).directory / path).read_bytes()).hexdigest()


async def test_stale_if_match_on_a_file_is_412_and_the_file_is_unchanged(
    container: Container,
) -> None:
    files = container.services.files
    uid = await make_user(container)
    etag = await files.write_file(uid, "notes/a.md", b"v1\n")
    assert (await files.read_file(uid, "notes/a.md")).etag == etag == etag_for(b"v1\n")
    newer = await files.write_file(uid, "notes/a.md", b"v2\n", if_match=etag)
    before = _sha(container, uid, "notes/a.md")
    with pytest.raises(PreconditionFailed) as refused:
        await files.write_file(uid, "notes/a.md", b"stale edit\n", if_match=etag)
    assert status_for(refused.value) == 412
    with pytest.raises(PreconditionFailed):
        await files.delete_file(uid, "notes/a.md", if_match=etag)
    assert _sha(container, uid, "notes/a.md") == before
    assert (await files.read_file(uid, "notes/a.md")).data == b"v2\n"
    await files.delete_file(uid, "notes/a.md", if_match=f'W/"x", {newer}')
    with pytest.raises(WorkspaceFileNotFound):
        await files.read_file(uid, "notes/a.md")


async def test_if_match_on_a_missing_file_matches_only_star(container: Container) -> None:
    files = container.services.files
    uid = await make_user(container)
    with pytest.raises(PreconditionFailed):
        await files.write_file(uid, "new.md", b"x", if_match=etag_for(b"x"))
    assert not (container.workspace(uid).directory / "new.md").exists()
    assert await files.write_file(uid, "new.md", b"x", if_match="*") == etag_for(b"x")


async def test_two_editors_with_one_etag_cannot_both_win(container: Container) -> None:
    files = container.services.files
    uid = await make_user(container)
    etag = await files.write_file(uid, "shared.md", b"base\n")
    results = await asyncio.gather(
        *(
            files.write_file(uid, "shared.md", f"edit {i}\n".encode(), if_match=etag)
            for i in (1, 2)
        ),
        return_exceptions=True,
    )
    winners = [r for r in results if isinstance(r, str)]
    assert len(winners) == 1
    assert [type(r) for r in results if not isinstance(r, str)] == [PreconditionFailed]
    assert (await files.read_file(uid, "shared.md")).etag == winners[0]


async def test_files_must_be_utf8_and_memory_goes_through_the_memory_service(
    container: Container,
) -> None:
    files = container.services.files
    uid = await make_user(container)
    with pytest.raises(InvalidArgument):
        await files.write_file(uid, "bin.md", b"\xff\xfe")
    memory = await files.read_file(uid, "agents/MEMORY.md")
    assert memory.etag == (await container.services.memory.read_memory_file(uid))[1]
    etag = await files.write_file(uid, "agents/MEMORY.md", b"- tea\n", if_match=memory.etag)
    with pytest.raises(PreconditionFailed):
        await files.write_file(uid, "agents/MEMORY.md", b"- coffee\n", if_match=memory.etag)
    assert (await files.read_file(uid, "agents/MEMORY.md")).data == b"- tea\n"
    await files.delete_file(uid, "agents/MEMORY.md", if_match=etag)
    assert (await files.read_file(uid, "agents/MEMORY.md")).data == b""


async def test_memory_is_never_replaced_blindly_and_if_none_match_creates_only(
    container: Container,
) -> None:
    """Issue 10 §5: a PUT of MEMORY.md without If-Match is 428; If-None-Match: * creates only."""
    uid = await make_user(container)
    files = container.services.files
    memory = await files.read_file(uid, "agents/MEMORY.md")
    await files.write_file(uid, "agents/MEMORY.md", "- 我喝乌龙茶\n".encode(), if_match=memory.etag)
    before = _sha(container, uid, "agents/MEMORY.md")
    with pytest.raises(PreconditionRequired) as blind:
        await files.write_file(uid, "agents/MEMORY.md", b"blind overwrite\n")
    assert status_for(blind.value) == 428
    with pytest.raises(PreconditionFailed):
        await files.write_file(uid, "agents/MEMORY.md", b"x\n", if_none_match="*")
    assert _sha(container, uid, "agents/MEMORY.md") == before
    # Create-only on an ordinary file: the first wins, a second is 412 and changes nothing.
    etag = await files.write_file(uid, "notes/new.md", "新建\n".encode(), if_none_match="*")
    with pytest.raises(PreconditionFailed):
        await files.write_file(uid, "notes/new.md", b"again\n", if_none_match="*")
    assert (await files.read_file(uid, "notes/new.md")).etag == etag
    with pytest.raises(InvalidArgument):
        await files.write_file(uid, "notes/other.md", b"x", if_none_match='"abc"')
