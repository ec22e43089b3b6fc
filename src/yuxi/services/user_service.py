"""Users, their credentials (API tokens, browser sessions, login codes) and their memory switch,
for the API and the CLI.

Credentials (issue 10 §4): a long-lived token is never put in a URL. A login link carries a
short-lived, single-use *login code*; the UI exchanges it (``POST /api/v1/session``) for a
*session token* that expires. Every token can be listed and revoked, and a revoked or expired
token authenticates nothing. Only digests are stored; a plaintext is shown once.

The switch the *agent* reads stays in :class:`~yuxi.services.memory.service.MemoryService` (it
re-reads it under the memory lock); this service is the user's side: viewing and flipping it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from yuxi.errors import Conflict, InvalidArgument, NotFound, Unauthorized
from yuxi.limits import (
    LOGIN_CODE_TTL_SECONDS,
    SESSION_TOKEN_TTL_SECONDS,
    TOKEN_MAX_DAYS,
    USER_NAME_MAX_CHARS,
)
from yuxi.repositories.token_repository import well_formed
from yuxi.services.unit_of_work import UnitOfWork, UnitOfWorkFactory
from yuxi.utils.string_utils import check_text
from yuxi.vocabulary import SESSION_TOKEN_LABEL
from yuxi.workspace.filesystem import Workspace

#: One answer for an unknown, spent and expired code alike (nothing to probe).
LOGIN_CODE_REFUSED = "this login code is invalid, used or expired; ask for a new login link"


@dataclass(frozen=True)
class UserView:
    uid: str
    name: str
    created_at: datetime


@dataclass(frozen=True)
class IssuedToken:
    """A user and a freshly issued token (its plaintext is shown once, never stored)."""

    uid: str
    name: str
    token: str
    #: None: the token never expires (until revoked).
    expires_at: datetime | None = None


@dataclass(frozen=True)
class IssuedSession:
    """A browser session token (plaintext shown once); it always expires."""

    uid: str
    name: str
    token: str
    expires_at: datetime


@dataclass(frozen=True)
class IssuedLoginCode:
    """A fresh login code for ``uid`` (plaintext shown once), accepted once until ``expires_at``."""

    uid: str
    code: str
    expires_at: datetime


@dataclass(frozen=True)
class TokenView:
    """One token as its owner may see it: never its plaintext or digest."""

    id: int
    label: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    #: Neither revoked nor expired now (by the database clock).
    active: bool


class UserService:
    def __init__(self, uow: UnitOfWorkFactory, workspaces: Callable[[str], Workspace]) -> None:
        self._uow = uow
        self._workspaces = workspaces

    # -- users ------------------------------------------------------------------------------

    async def create_user(self, name: str, *, uid: str | None = None) -> IssuedToken:
        """A new user with memory off, one API token (no expiry) and an initialised workspace.

        ``name`` is stored stripped; a blank name, one over ``USER_NAME_MAX_CHARS`` characters
        and one another user already has (:class:`Conflict`) are refused: a name is how a
        person finds their uid in ``yuxi users list``, so two users never share one."""
        name = check_text("name", name, max_chars=USER_NAME_MAX_CHARS, strip=True)
        async with self._uow() as uow:
            await uow.users.lock_name(name)
            taken_by = await uow.users.uid_named(name)
            if taken_by is not None:
                raise Conflict(f"a user named {name!r} already exists (uid {taken_by})")
            user = await uow.users.create_user(name, uid=uid)
            token = await uow.tokens.add_token(user.uid)
            # The workspace before the commit: a data dir that refuses it (full, read-only)
            # refuses the user whole, so no user is left without a workspace and the same
            # command succeeds once the disk is fixed.
            await self._workspaces(user.uid).ensure_user_workspace()
            await uow.commit()
        return IssuedToken(user.uid, user.name, token.plaintext, token.expires_at)

    async def ensure_user(self, uid: str, *, name: str) -> UserView:
        """The user ``uid``, created (named ``name``, memory off, no token) when it does not
        exist; its workspace initialised either way."""
        workspace = self._workspaces(uid)
        async with self._uow() as uow:
            user = await uow.users.get(uid)
            if user is None:
                user = await uow.users.create_user(name, uid=uid)
                await workspace.ensure_user_workspace()  # before the commit, as create_user
                await uow.commit()
                return UserView(user.uid, user.name, user.created_at)
        await workspace.ensure_user_workspace()  # an existing user: no connection held for it
        return UserView(user.uid, user.name, user.created_at)

    async def get_user(self, uid: str) -> UserView:
        async with self._uow() as uow:
            user = await uow.users.get(uid)
        if user is None:
            raise NotFound("user not found")
        return UserView(user.uid, user.name, user.created_at)

    async def list_users(self) -> list[UserView]:
        async with self._uow() as uow:
            users = await uow.users.list_users()
        return [UserView(u.uid, u.name, u.created_at) for u in users]

    # -- tokens -----------------------------------------------------------------------------

    async def create_token(
        self, uid: str, *, label: str, expires_in_days: int | None = None
    ) -> IssuedToken:
        """A new API token for an existing user; with ``expires_in_days`` it expires then."""
        if expires_in_days is not None and not 1 <= expires_in_days <= TOKEN_MAX_DAYS:
            raise InvalidArgument(f"a token expires after 1 to {TOKEN_MAX_DAYS} days")
        ttl = None if expires_in_days is None else expires_in_days * 24 * 60 * 60
        async with self._uow() as uow:
            user = await _existing_user(uow, uid)
            token = await uow.tokens.add_token(uid, label=label, ttl_seconds=ttl)
            await uow.commit()
        return IssuedToken(user.uid, user.name, token.plaintext, token.expires_at)

    async def authenticate(self, token: str) -> str:
        """The uid a bearer token belongs to; :class:`Unauthorized` for anything else
        (unknown, revoked or expired)."""
        if not well_formed(token):
            raise Unauthorized("invalid token")
        async with self._uow.one_statement() as uow:
            uid = await uow.tokens.uid_for_token(token)
        if uid is None:
            raise Unauthorized("invalid token")
        return uid

    async def list_tokens(self, uid: str) -> list[TokenView]:
        async with self._uow() as uow:
            await _existing_user(uow, uid)
            rows = await uow.tokens.list_tokens(uid)
        return [
            TokenView(t.id, t.label, t.created_at, t.expires_at, t.revoked_at, bool(active))
            for t, active in rows
        ]

    async def revoke_tokens(self, uid: str, token_id: int | None = None) -> list[int]:
        """Revoke every token of ``uid`` (or only ``token_id``, which must be theirs); the ids
        revoked now (an already revoked token is not counted again)."""
        async with self._uow() as uow:
            await _existing_user(uow, uid)
            if token_id is not None and not await uow.tokens.token_exists(uid, token_id):
                raise NotFound("token not found")
            revoked = await uow.tokens.revoke(uid, token_id)
            await uow.commit()
        return revoked

    # -- login codes ------------------------------------------------------------------------

    async def issue_login_code(self, uid: str) -> IssuedLoginCode:
        """A single-use login code for an existing user, valid for ``LOGIN_CODE_TTL_SECONDS``."""
        async with self._uow() as uow:
            await _existing_user(uow, uid)
            code, expires_at = await uow.tokens.add_login_code(
                uid, ttl_seconds=LOGIN_CODE_TTL_SECONDS
            )
            await uow.commit()
        return IssuedLoginCode(uid, code, expires_at)

    async def exchange_login_code(self, code: str) -> IssuedSession:
        """Spend a login code for a session token that expires after
        ``SESSION_TOKEN_TTL_SECONDS``. The code is spent and the token stored in one
        transaction; an unknown, spent or expired code is :class:`Unauthorized`."""
        if not well_formed(code):
            raise Unauthorized(LOGIN_CODE_REFUSED)
        async with self._uow() as uow:
            uid = await uow.tokens.use_login_code(code)
            if uid is None:
                raise Unauthorized(LOGIN_CODE_REFUSED)
            user = await _existing_user(uow, uid)
            token = await uow.tokens.add_token(
                uid, label=SESSION_TOKEN_LABEL, ttl_seconds=SESSION_TOKEN_TTL_SECONDS
            )
            if token.expires_at is None:  # never hand out a never-expiring token this way
                raise RuntimeError("a session token was stored without an expiry")
            await uow.commit()
        return IssuedSession(user.uid, user.name, token.plaintext, token.expires_at)

    # -- the memory switch ------------------------------------------------------------------

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


async def _existing_user(uow: UnitOfWork, uid: str) -> UserView:
    user = await uow.users.get(uid)
    if user is None:
        raise NotFound("user not found")
    return UserView(user.uid, user.name, user.created_at)
