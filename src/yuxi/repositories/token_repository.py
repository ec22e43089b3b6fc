"""API tokens and login codes, stored only as sha256 digests. Never commits: callers own
transactions. Every time comparison uses the database clock (``now()``)."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Row, String, and_, bindparam, delete, func, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from yuxi.db.models import ApiToken, LoginCode
from yuxi.db.notifications import TOKENS_REVOKED
from yuxi.db.prebuilt import PrebuiltStatement
from yuxi.limits import CREDENTIAL_MAX_CHARS
from yuxi.repositories.notify import notify
from yuxi.vocabulary import LOGIN_CODE_PREFIX, TOKEN_PREFIX


def hash_credential(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def well_formed(credential: str) -> bool:
    """Whether ``credential`` could be a token or login code at all (anything else is refused
    without a query)."""
    return bool(credential) and len(credential) <= CREDENTIAL_MAX_CHARS and credential.isascii()


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def new_login_code() -> str:
    return LOGIN_CODE_PREFIX + secrets.token_urlsafe(32)


def token_is_valid() -> ColumnElement[bool]:
    """Neither revoked nor expired, by the database clock."""
    return and_(
        ApiToken.revoked_at.is_(None),
        or_(ApiToken.expires_at.is_(None), ApiToken.expires_at > func.now()),
    )


#: The owner of a valid token, asked by every authenticated request: built once, run prebuilt.
_UID_FOR_TOKEN = PrebuiltStatement(
    select(ApiToken.uid).where(
        ApiToken.token_hash == bindparam("token_hash", type_=String), token_is_valid()
    )
)


@dataclass(frozen=True)
class NewCredential:
    """A freshly stored token: the plaintext (shown once) and its row's facts."""

    id: int
    plaintext: str
    expires_at: datetime | None


class TokenRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    # -- API and session tokens -------------------------------------------------------------

    async def add_token(
        self, uid: str, *, label: str = "default", ttl_seconds: int | None = None
    ) -> NewCredential:
        """Store a new token's digest; ``ttl_seconds`` (from now) sets its expiry."""
        token = new_token()
        expires = None if ttl_seconds is None else func.now() + timedelta(seconds=ttl_seconds)
        row = (
            await self.session.execute(
                insert(ApiToken)
                .values(uid=uid, token_hash=hash_credential(token), label=label, expires_at=expires)
                .returning(ApiToken.id, ApiToken.expires_at)
            )
        ).one()
        return NewCredential(row.id, token, row.expires_at)

    async def uid_for_token(self, token: str) -> str | None:
        """The owner of a valid (not revoked, not expired) token."""
        row = await _UID_FOR_TOKEN.first(self.session, {"token_hash": hash_credential(token)})
        return None if row is None else str(row.uid)

    async def standings(self, tokens: Sequence[str]) -> dict[str, tuple[str, float | None]]:
        """For each valid token among ``tokens``: its owner and the seconds it has left by
        the database clock (None: no expiry). One statement however many tokens."""
        by_hash = {
            hash_credential(t): t for t in tokens if t.isascii() and len(t) <= CREDENTIAL_MAX_CHARS
        }
        rows = await self.session.execute(
            select(
                ApiToken.token_hash,
                ApiToken.uid,
                func.extract("epoch", ApiToken.expires_at - func.now()),
            ).where(ApiToken.token_hash.in_(list(by_hash)), token_is_valid())
        )
        return {by_hash[h]: (uid, None if left is None else float(left)) for h, uid, left in rows}

    async def list_tokens(self, uid: str) -> Sequence[Row[ApiToken, bool]]:
        """The user's tokens, oldest first, each with whether it is valid now."""
        rows = await self.session.execute(
            select(ApiToken, token_is_valid().label("active"))
            .where(ApiToken.uid == uid)
            .order_by(ApiToken.id)
        )
        return rows.all()

    async def revoke(self, uid: str, token_id: int | None = None) -> list[int]:
        """Revoke the user's tokens not yet revoked (all, or the one ``token_id``); their ids."""
        stmt = (
            update(ApiToken)
            .where(ApiToken.uid == uid, ApiToken.revoked_at.is_(None))
            .values(revoked_at=func.now())
            .returning(ApiToken.id)
        )
        if token_id is not None:
            stmt = stmt.where(ApiToken.id == token_id)
        revoked = sorted((await self.session.execute(stmt)).scalars().all())
        if revoked:  # open event streams re-check their tokens when this commits
            await self.session.execute(notify(TOKENS_REVOKED, uid))
        return revoked

    async def token_exists(self, uid: str, token_id: int) -> bool:
        row = await self.session.execute(
            select(ApiToken.id).where(ApiToken.uid == uid, ApiToken.id == token_id)
        )
        return row.scalar_one_or_none() is not None

    # -- login codes ------------------------------------------------------------------------

    async def add_login_code(self, uid: str, *, ttl_seconds: int) -> tuple[str, datetime]:
        """Store a new login code's digest, valid for ``ttl_seconds``: the plaintext (shown
        once) and its expiry. The user's codes that can no longer be used (spent or expired)
        are deleted on the way."""
        await self.session.execute(
            delete(LoginCode).where(
                LoginCode.uid == uid,
                or_(LoginCode.used_at.is_not(None), LoginCode.expires_at <= func.now()),
            )
        )
        code = new_login_code()
        expires_at = (
            await self.session.execute(
                insert(LoginCode)
                .values(
                    uid=uid,
                    code_hash=hash_credential(code),
                    expires_at=func.now() + timedelta(seconds=ttl_seconds),
                )
                .returning(LoginCode.expires_at)
            )
        ).scalar_one()
        return code, expires_at

    async def use_login_code(self, code: str) -> str | None:
        """Spend a login code: the uid it was issued to, if it was unused and unexpired. One
        statement, so two concurrent exchanges of one code cannot both succeed."""
        row = await self.session.execute(
            update(LoginCode)
            .where(
                LoginCode.code_hash == hash_credential(code),
                LoginCode.used_at.is_(None),
                LoginCode.expires_at > func.now(),
            )
            .values(used_at=func.now())
            .returning(LoginCode.uid)
        )
        return row.scalar_one_or_none()
