"""Users and their UserConfig (tokens: ``token_repository``). Never commits: callers own
transactions."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import cast

from sqlalchemy import String, Table, bindparam, func, select, text
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from yuxi.db.models import User, UserConfig
from yuxi.db.prebuilt import PrebuiltStatement

#: The memory switch, read at the start of every run: built once and run prebuilt.
_MEMORY_ENABLED = PrebuiltStatement(
    select(cast(Table, UserConfig.__table__).c.enable_memory).where(
        cast(Table, UserConfig.__table__).c.uid == bindparam("uid", type_=String)
    )
)


class UserRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def create_user(self, name: str, *, uid: str | None = None) -> User:
        user = User(uid=uid or f"u_{uuid.uuid4().hex}", name=name)
        self.session.add(user)
        self.session.add(UserConfig(uid=user.uid, enable_memory=False))
        await self.session.flush()
        return user

    async def lock_name(self, name: str) -> None:
        """Serialise creations of users named ``name`` until the transaction ends (a
        transaction-scoped advisory lock), so a check-then-insert cannot race."""
        await self.session.execute(
            text("SELECT pg_advisory_xact_lock(hashtextextended('user-name:' || :name, 0))"),
            {"name": name},
        )

    async def uid_named(self, name: str) -> str | None:
        """The uid of a user named exactly ``name``, if any (the oldest one)."""
        row = await self.session.execute(
            select(User.uid).where(User.name == name).order_by(User.created_at).limit(1)
        )
        return row.scalar_one_or_none()

    async def get(self, uid: str) -> User | None:
        return await self.session.get(User, uid)

    async def list_users(self) -> Sequence[User]:
        """Every user, oldest first."""
        rows = await self.session.execute(select(User).order_by(User.created_at, User.uid))
        return rows.scalars().all()

    async def memory_enabled(self, uid: str) -> bool:
        """The single switch. A user without a config row has memory off (fail closed)."""
        row = await _MEMORY_ENABLED.first(self.session, {"uid": uid})
        return row is not None and bool(row.enable_memory)

    async def set_memory_enabled(self, uid: str, enabled: bool) -> None:
        stmt = insert(UserConfig).values(uid=uid, enable_memory=enabled)
        stmt = stmt.on_conflict_do_update(
            index_elements=[UserConfig.uid],
            set_={"enable_memory": enabled, "updated_at": func.now()},
        )
        await self.session.execute(stmt)
