"""Users, their hashed API tokens and their UserConfig. Never commits: callers own transactions."""

from __future__ import annotations

import hashlib
import secrets
import uuid

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from yuxi.db.models import ApiToken, User, UserConfig

TOKEN_PREFIX = "yx_"  # noqa: S105 - a public prefix, not a secret


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


class UserRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def create_user(self, name: str, *, uid: str | None = None) -> User:
        user = User(uid=uid or f"u_{uuid.uuid4().hex}", name=name)
        self.session.add(user)
        self.session.add(UserConfig(uid=user.uid, enable_memory=False))
        await self.session.flush()
        return user

    async def get(self, uid: str) -> User | None:
        return await self.session.get(User, uid)

    async def add_token(self, uid: str, *, label: str = "default") -> str:
        """Create a token; only its digest is stored. Returns the plaintext (shown once)."""
        token = new_token()
        self.session.add(ApiToken(uid=uid, token_hash=hash_token(token), label=label))
        await self.session.flush()
        return token

    async def uid_for_token(self, token: str) -> str | None:
        row = await self.session.execute(
            select(ApiToken.uid).where(
                ApiToken.token_hash == hash_token(token), ApiToken.revoked_at.is_(None)
            )
        )
        return row.scalar_one_or_none()

    async def memory_enabled(self, uid: str) -> bool:
        """The single switch. A user without a config row has memory off (fail closed)."""
        row = await self.session.execute(
            select(UserConfig.enable_memory).where(UserConfig.uid == uid)
        )
        return bool(row.scalar_one_or_none())

    async def set_memory_enabled(self, uid: str, enabled: bool) -> None:
        stmt = insert(UserConfig).values(uid=uid, enable_memory=enabled)
        stmt = stmt.on_conflict_do_update(
            index_elements=[UserConfig.uid],
            set_={"enable_memory": enabled, "updated_at": func.now()},
        )
        await self.session.execute(stmt)
