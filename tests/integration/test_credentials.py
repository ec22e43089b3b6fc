"""Credentials on a real PostgreSQL (issue 10 §4): single-use login codes, expiring session
tokens, token expiry and revocation, listing without secrets, and ``yuxi run``'s login link."""

from __future__ import annotations

import asyncio
import hashlib
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy import text

from tests.support.factories import sql
from yuxi.bootstrap import Container
from yuxi.cli import DEMO_UID, demo_banner
from yuxi.errors import InvalidArgument, NotFound, Unauthorized
from yuxi.limits import LOGIN_CODE_TTL_SECONDS, SESSION_TOKEN_TTL_SECONDS, TOKEN_MAX_DAYS
from yuxi.services.user_service import LOGIN_CODE_REFUSED
from yuxi.vocabulary import LOGIN_CODE_PREFIX, SESSION_TOKEN_LABEL, TOKEN_PREFIX


async def _scalar(c: Container, statement: str, **params: object) -> object:
    async with c.session_factory() as s:
        return (await s.execute(text(statement), params)).scalar()


# -- login codes ---------------------------------------------------------------------------------


async def test_a_login_code_is_exchanged_once_for_an_expiring_session_token(
    container: Container,
) -> None:
    users = container.services.users
    created = await users.create_user("ada")
    issued = await users.issue_login_code(created.uid)
    assert issued.code.startswith(LOGIN_CODE_PREFIX) and len(issued.code) == 3 + 43
    session = await users.exchange_login_code(issued.code)
    assert session.uid == created.uid and session.name == "ada"
    assert session.token.startswith(TOKEN_PREFIX) and session.token != created.token
    assert await users.authenticate(session.token) == created.uid

    # the code is spent: a second exchange is refused, and the first token stays the only one
    with pytest.raises(Unauthorized) as refused:
        await users.exchange_login_code(issued.code)
    assert str(refused.value) == LOGIN_CODE_REFUSED
    tokens = await users.list_tokens(created.uid)
    assert [t.label for t in tokens] == ["default", SESSION_TOKEN_LABEL]

    # lifetimes by the database clock: code 5 minutes, session 30 days, the API token none
    async with container.session_factory() as s:
        code_ttl, token_ttl, created_at = (
            await s.execute(
                text(
                    "SELECT c.expires_at - c.created_at, t.expires_at - t.created_at, "
                    "t.created_at FROM login_codes c, api_tokens t "
                    "WHERE c.uid = :uid AND t.uid = :uid AND t.label = :label"
                ),
                {"uid": created.uid, "label": SESSION_TOKEN_LABEL},
            )
        ).one()
    assert code_ttl == timedelta(seconds=LOGIN_CODE_TTL_SECONDS)
    assert token_ttl == timedelta(seconds=SESSION_TOKEN_TTL_SECONDS)
    assert session.expires_at == created_at + timedelta(seconds=SESSION_TOKEN_TTL_SECONDS)
    assert tokens[0].expires_at is None and tokens[1].expires_at == session.expires_at


async def test_an_expired_login_code_is_refused(container: Container) -> None:
    users = container.services.users
    uid = (await users.create_user("bo")).uid
    expired = await users.issue_login_code(uid)
    still_valid = await users.issue_login_code(uid)
    await sql(
        container,
        "UPDATE login_codes SET expires_at = now() - interval '1 second' WHERE code_hash = :h",
        h=hashlib.sha256(expired.code.encode()).hexdigest(),
    )
    with pytest.raises(Unauthorized) as refused:
        await users.exchange_login_code(expired.code)
    assert str(refused.value) == LOGIN_CODE_REFUSED  # the same words as for a used code
    assert (await users.exchange_login_code(still_valid.code)).uid == uid


@pytest.mark.parametrize(
    "code",
    ["", "yl_unknown", "yl_" + "a" * 300, "yl_é", "\x00", "yx_not-a-code"],
)
async def test_an_unknown_or_malformed_code_is_refused_alike(
    container: Container, code: str
) -> None:
    uid = (await container.services.users.create_user("cy")).uid
    await container.services.users.issue_login_code(uid)
    with pytest.raises(Unauthorized) as refused:
        await container.services.users.exchange_login_code(code)
    assert str(refused.value) == LOGIN_CODE_REFUSED


async def test_a_token_is_not_a_login_code(container: Container) -> None:
    created = await container.services.users.create_user("di")
    with pytest.raises(Unauthorized):
        await container.services.users.exchange_login_code(created.token)


async def test_racing_exchanges_of_one_code_yield_exactly_one_session(container: Container) -> None:
    users = container.services.users
    uid = (await users.create_user("ed")).uid
    code = (await users.issue_login_code(uid)).code
    results = await asyncio.gather(
        *(users.exchange_login_code(code) for _ in range(8)), return_exceptions=True
    )
    won = [r for r in results if not isinstance(r, BaseException)]
    lost = [r for r in results if isinstance(r, BaseException)]
    assert len(won) == 1, results
    assert all(isinstance(e, Unauthorized) for e in lost), lost
    assert (
        await _scalar(
            container,
            "SELECT count(*) FROM api_tokens WHERE uid = :uid AND label = :label",
            uid=uid,
            label=SESSION_TOKEN_LABEL,
        )
        == 1
    )


async def test_codes_and_tokens_are_stored_only_as_digests(container: Container) -> None:
    users = container.services.users
    created = await users.create_user("fay")
    code = (await users.issue_login_code(created.uid)).code
    session = await users.exchange_login_code((await users.issue_login_code(created.uid)).code)
    async with container.session_factory() as s:
        rows = (
            await s.execute(
                text(
                    "SELECT row_to_json(c)::text FROM login_codes c "
                    "UNION ALL SELECT row_to_json(t)::text FROM api_tokens t"
                )
            )
        ).scalars()
        dump = "\n".join(rows)
    for secret in (code, session.token, created.token):
        assert secret not in dump
        assert secret[3:] not in dump
        assert hashlib.sha256(secret.encode()).hexdigest() in dump


async def test_a_new_code_clears_the_users_spent_and_expired_codes(container: Container) -> None:
    users = container.services.users
    uid = (await users.create_user("gus")).uid
    spent = (await users.issue_login_code(uid)).code
    await users.exchange_login_code(spent)
    expired = (await users.issue_login_code(uid)).code
    await sql(container, "UPDATE login_codes SET expires_at = now() - interval '1 second'")
    live = await users.issue_login_code(uid)
    count = await _scalar(container, "SELECT count(*) FROM login_codes WHERE uid = :u", u=uid)
    assert count == 1
    assert (await users.exchange_login_code(live.code)).uid == uid
    with pytest.raises(Unauthorized):
        await users.exchange_login_code(expired)


async def test_a_login_code_for_an_unknown_user_is_not_found(container: Container) -> None:
    with pytest.raises(NotFound):
        await container.services.users.issue_login_code("u_nobody")


# -- token expiry and revocation -----------------------------------------------------------------


async def test_an_expired_token_is_refused(container: Container) -> None:
    users = container.services.users
    uid = (await users.create_user("hal")).uid
    token = await users.create_token(uid, label="ci", expires_in_days=1)
    assert token.expires_at is not None
    assert await users.authenticate(token.token) == uid
    await sql(
        container,
        "UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE token_hash = :h",
        h=hashlib.sha256(token.token.encode()).hexdigest(),
    )
    with pytest.raises(Unauthorized):
        await users.authenticate(token.token)
    [view] = [t for t in await users.list_tokens(uid) if t.label == "ci"]
    assert view.active is False and view.revoked_at is None


async def test_an_expired_session_token_is_refused(container: Container) -> None:
    users = container.services.users
    uid = (await users.create_user("ida")).uid
    session = await users.exchange_login_code((await users.issue_login_code(uid)).code)
    await sql(
        container,
        "UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE label = :label",
        label=SESSION_TOKEN_LABEL,
    )
    with pytest.raises(Unauthorized):
        await users.authenticate(session.token)


@pytest.mark.parametrize("days", [0, TOKEN_MAX_DAYS + 1, -1])
async def test_a_token_expiry_out_of_range_is_refused(container: Container, days: int) -> None:
    uid = (await container.services.users.create_user("jo")).uid
    with pytest.raises(InvalidArgument):
        await container.services.users.create_token(uid, label="x", expires_in_days=days)


@pytest.mark.parametrize("days", [1, TOKEN_MAX_DAYS])
async def test_a_token_expiry_in_range_is_kept(container: Container, days: int) -> None:
    users = container.services.users
    uid = (await users.create_user("kay")).uid
    token = await users.create_token(uid, label="x", expires_in_days=days)
    lifetime = await _scalar(
        container, "SELECT expires_at - created_at FROM api_tokens WHERE label = 'x'"
    )
    assert lifetime == timedelta(days=days)
    [view] = [t for t in await users.list_tokens(uid) if t.label == "x"]
    assert view.expires_at == token.expires_at and view.active
    assert await users.authenticate(token.token) == uid


async def test_revoking_one_token_or_all_of_them(container: Container) -> None:
    users = container.services.users
    created = await users.create_user("lea")
    uid = created.uid
    second = await users.create_token(uid, label="second")
    session = await users.exchange_login_code((await users.issue_login_code(uid)).code)
    ids = [t.id for t in await users.list_tokens(uid)]
    assert len(ids) == 3

    assert await users.revoke_tokens(uid, ids[1]) == [ids[1]]
    with pytest.raises(Unauthorized):
        await users.authenticate(second.token)
    assert await users.authenticate(created.token) == uid
    assert await users.authenticate(session.token) == uid
    assert await users.revoke_tokens(uid, ids[1]) == []  # already revoked: nothing new

    assert await users.revoke_tokens(uid) == [ids[0], ids[2]]
    for token in (created.token, second.token, session.token):
        with pytest.raises(Unauthorized):
            await users.authenticate(token)
    views = await users.list_tokens(uid)
    assert [v.active for v in views] == [False, False, False]
    assert all(v.revoked_at is not None for v in views)


async def test_revoking_is_scoped_to_the_owner(container: Container) -> None:
    users = container.services.users
    owner = await users.create_user("mo")
    stranger = await users.create_user("ned")
    [owner_token] = await users.list_tokens(owner.uid)
    with pytest.raises(NotFound):
        await users.revoke_tokens(stranger.uid, owner_token.id)
    with pytest.raises(NotFound):
        await users.revoke_tokens("u_nobody")
    with pytest.raises(NotFound):
        await users.list_tokens("u_nobody")
    assert await users.authenticate(owner.token) == owner.uid


async def test_a_token_listing_never_holds_a_secret(container: Container) -> None:
    users = container.services.users
    created = await users.create_user("ola")
    session = await users.exchange_login_code((await users.issue_login_code(created.uid)).code)
    shown = repr(await users.list_tokens(created.uid))
    for secret in (created.token, session.token):
        assert secret not in shown
        assert hashlib.sha256(secret.encode()).hexdigest() not in shown


async def test_users_are_listed_oldest_first(container: Container) -> None:
    users = container.services.users
    first = await users.create_user("pia")
    second = await users.create_user("quinn")
    listed = await users.list_users()
    assert [(u.uid, u.name) for u in listed] == [(first.uid, "pia"), (second.uid, "quinn")]


# -- `yuxi run`: a login link, never a token -------------------------------------------------------


async def test_yuxi_run_prints_a_fresh_login_link_and_mints_no_token(container: Container) -> None:
    banners = [await demo_banner(container, base_url="http://127.0.0.1:8123") for _ in range(3)]
    codes = []
    for banner in banners:
        url = next(w for w in banner.split() if w.startswith("http://"))
        parts = urlsplit(url)
        assert (parts.netloc, parts.path) == ("127.0.0.1:8123", "/")
        [code] = parse_qs(parts.query)["login"]
        codes.append(code)
        # the code is random URL-safe text and may itself contain the token prefix: look for a
        # token in the rest of the banner
        rest = banner.replace(code, "")
        assert TOKEN_PREFIX not in rest and "token=" not in rest
    assert len(set(codes)) == 3
    # three starts: no token at all, three codes, each single use
    count = await _scalar(container, "SELECT count(*) FROM api_tokens WHERE uid = :u", u=DEMO_UID)
    assert count == 0
    assert (await container.services.users.get_user(DEMO_UID)).name == "Demo user"
    session = await container.services.users.exchange_login_code(codes[0])
    assert await container.services.users.authenticate(session.token) == DEMO_UID
    with pytest.raises(Unauthorized):
        await container.services.users.exchange_login_code(codes[0])


async def test_ensure_user_creates_the_user_once(container: Container) -> None:
    users = container.services.users
    first = await users.ensure_user("demo", name="Demo user")
    second = await users.ensure_user("demo", name="ignored")
    assert first == second and second.name == "Demo user"
    assert (container.workspace("demo").directory / "agents" / "MEMORY.md").is_file()
