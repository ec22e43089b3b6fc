"""Users, their API tokens and their memory switch, for the API and the CLI.

The switch the *agent* reads stays in :class:`~yuxi.services.memory_service.MemoryService` (it
re-reads it under the memory lock); this service is the user's side: viewing and flipping it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from yuxi.errors import NotFound, Unauthorized
from yuxi.services.unit_of_work import UnitOfWorkFactory
from yuxi.workspace.filesystem import Workspace

#: Longer than any token we issue (``yx_`` + 43 characters); refused before hashing.
TOKEN_MAX_CHARS = 256


@dataclass(frozen=True)
class UserView:
    uid: str
    name: str


@dataclass(frozen=True)
class IssuedToken:
    """A user and a freshly issued API token (its plaintext is shown once, never stored)."""

    uid: str
    name: str
    token: str


class UserService:
    def __init__(self, uow: UnitOfWorkFactory, workspaces: Callable[[str], Workspace]) -> None:
        self._uow = uow
        self._workspaces = workspaces

    async def create_user(self, name: str, *, uid: str | None = None) -> IssuedToken:
        """A new user with memory off, one API token and an initialised workspace."""
        async with self._uow() as uow:
            user = await uow.users.create_user(name, uid=uid)
            token = await uow.users.add_token(user.uid)
            await uow.commit()
        await self._workspaces(user.uid).ensure_user_workspace()
        return IssuedToken(user.uid, user.name, token)

    async def issue_token(self, uid: str, *, name: str, label: str) -> IssuedToken:
        """A new token for ``uid``, creating the user (named ``name``) when it does not exist."""
        async with self._uow() as uow:
            user = await uow.users.get(uid)
            if user is None:
                user = await uow.users.create_user(name, uid=uid)
            token = await uow.users.add_token(uid, label=label)
            await uow.commit()
        await self._workspaces(uid).ensure_user_workspace()
        return IssuedToken(user.uid, user.name, token)

    async def authenticate(self, token: str) -> str:
        """The uid a bearer token belongs to; :class:`Unauthorized` for anything else."""
        if not token or len(token) > TOKEN_MAX_CHARS or not token.isascii():
            raise Unauthorized("invalid token")
        async with self._uow() as uow:
            uid = await uow.users.uid_for_token(token)
        if uid is None:
            raise Unauthorized("invalid token")
        return uid

    async def get_user(self, uid: str) -> UserView:
        async with self._uow() as uow:
            user = await uow.users.get(uid)
        if user is None:
            raise NotFound("user not found")
        return UserView(user.uid, user.name)

    async def memory_enabled(self, uid: str) -> bool:
        async with self._uow() as uow:
            return await uow.users.memory_enabled(uid)

    async def set_memory_enabled(self, uid: str, enabled: bool) -> bool:
        """Flip the switch; turning memory on also makes sure the workspace (and MEMORY.md)
        exists. Returns the new value."""
        async with self._uow() as uow:
            await uow.users.set_memory_enabled(uid, enabled)
            await uow.commit()
        if enabled:
            await self._workspaces(uid).ensure_user_workspace()
        return enabled
