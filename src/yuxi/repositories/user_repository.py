"""Users and their UserConfig (tokens: ``token_repository``). Never commits: callers own
transactions."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from yuxi.db.models import User, UserConfig


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

    async def list_users(self) -> Sequence[User]:
        """Every user, oldest first."""
        rows = await self.session.execute(select(User).order_by(User.created_at, User.uid))
        return rows.scalars().all()

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
