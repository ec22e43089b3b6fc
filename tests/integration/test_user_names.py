"""A user's name (``yuxi users create NAME``): stripped, not blank, at most
``USER_NAME_MAX_CHARS`` characters, and unique per installation — also under concurrency."""

from __future__ import annotations

import asyncio

import pytest
from typer.testing import CliRunner

from yuxi.bootstrap import Container
from yuxi.cli import app
from yuxi.errors import Conflict, InvalidArgument, StorageFull
from yuxi.limits import USER_NAME_MAX_CHARS
from yuxi.settings import Settings
from yuxi.workspace.filesystem import Workspace


@pytest.mark.parametrize("name", ["", "   ", "\t\n", "a\x00b"])
async def test_a_blank_or_invalid_name_is_refused(container: Container, name: str) -> None:
    with pytest.raises(InvalidArgument, match="name"):
        await container.services.users.create_user(name)
    assert await container.services.users.list_users() == []


async def test_name_limit_in_characters_with_cjk(container: Container) -> None:
    users = container.services.users
    at_limit = "林" * USER_NAME_MAX_CHARS
    created = await users.create_user(f"  {at_limit}  ")
    assert (await users.get_user(created.uid)).name == at_limit  # stored stripped
    with pytest.raises(InvalidArgument, match=str(USER_NAME_MAX_CHARS)):
        await users.create_user("森" * (USER_NAME_MAX_CHARS + 1))


async def test_a_taken_name_is_refused_stripped_or_not(container: Container) -> None:
    users = container.services.users
    first = await users.create_user("alice 爱丽丝")
    for again in ("alice 爱丽丝", " alice 爱丽丝\n"):
        with pytest.raises(Conflict, match=first.uid):
            await users.create_user(again)
    other = await users.create_user("Alice 爱丽丝")  # another name: case is part of it
    assert [u.uid for u in await users.list_users()] == [first.uid, other.uid]


async def test_concurrent_creations_of_one_name_make_one_user(container: Container) -> None:
    results = await asyncio.gather(
        *(container.services.users.create_user("bob") for _ in range(6)),
        return_exceptions=True,
    )
    made = [r for r in results if not isinstance(r, BaseException)]
    refused = [r for r in results if isinstance(r, Conflict)]
    assert len(made) == 1 and len(refused) == 5, results
    assert [u.name for u in await container.services.users.list_users()] == ["bob"]


def test_cli_users_create_refuses_blank_and_duplicate(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("YUXI_DATABASE_URL", settings.database_url or "")
    monkeypatch.setenv("YUXI_DATA_DIR", str(settings.data_dir))
    runner = CliRunner()
    assert runner.invoke(app, ["users", "create", "alice"]).exit_code == 0
    again = runner.invoke(app, ["users", "create", "alice"])
    assert again.exit_code == 1
    assert "error (conflict): a user named 'alice' already exists" in again.output
    blank = runner.invoke(app, ["users", "create", ""])
    assert blank.exit_code == 1
    assert "error (invalid_argument): name must not be blank" in blank.output
    listed = runner.invoke(app, ["users", "list"]).output.splitlines()[1:]
    assert len(listed) == 1 and listed[0].endswith("alice")


async def test_a_data_dir_that_refuses_the_workspace_refuses_the_user_whole(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full (or read-only) data dir: ``create_user`` (and ``ensure_user``) is storage_full and
    leaves no user row and no token, so the same name is free and succeeds once the disk is
    fixed."""

    async def full(self: Workspace) -> None:
        raise StorageFull("no space left on device")

    monkeypatch.setattr(Workspace, "ensure_user_workspace", full)
    with pytest.raises(StorageFull):
        await container.services.users.create_user("满盘用户")
    assert [u.name for u in await container.services.users.list_users()] == []
    monkeypatch.undo()
    issued = await container.services.users.create_user("满盘用户")
    assert await container.services.users.authenticate(issued.token) == issued.uid
    assert container.workspace(issued.uid).directory.is_dir()

    # ensure_user (the demo user of `yuxi run`) follows the same rule
    monkeypatch.setattr(Workspace, "ensure_user_workspace", full)
    with pytest.raises(StorageFull):
        await container.services.users.ensure_user("u_demo_full", name="demo")
    assert [u.uid for u in await container.services.users.list_users()] == [issued.uid]
    monkeypatch.undo()
    await container.services.users.ensure_user("u_demo_full", name="demo")
    assert container.workspace("u_demo_full").directory.is_dir()
