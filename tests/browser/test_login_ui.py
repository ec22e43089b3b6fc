"""Login links in the browser (issue 10 §4): a link's single-use code signs in once and leaves
the address bar at once; the page keeps an expiring session token, never the code; a second use
of the link, or an old link with a token in it, is refused cleanly; the token form still works;
a revoked session signs the page out."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.async_api import expect

from tests.browser.conftest import UI
from tests.support.server import LiveServer, create_user_with_token, login_link
from yuxi.bootstrap import Container
from yuxi.vocabulary import SESSION_TOKEN_LABEL

pytestmark = pytest.mark.browser


async def _stored_token(page: Any) -> Any:
    return await page.evaluate("localStorage.getItem('yuxi.token')")


async def test_a_login_link_signs_in_once_and_leaves_no_credential_in_the_url(
    live_server: LiveServer, container: Container, ui: UI, browser: Any
) -> None:
    users = container.services.users
    uid, api_token = await create_user_with_token(container, "lin 林")
    link = await login_link(live_server, container, uid)
    code = link.split("?login=", 1)[1]
    page = ui.page

    await page.goto(link)
    await expect(page.get_by_test_id("user-name")).to_have_text("lin 林")
    assert code not in page.url and "login=" not in page.url
    assert page.url.rstrip("/") == live_server.base_url
    session = await _stored_token(page)
    assert session not in (None, api_token, code)
    assert await users.authenticate(session) == uid
    assert [t.label for t in await users.list_tokens(uid) if t.active] == [
        "default",
        SESSION_TOKEN_LABEL,
    ]
    await ui.shot("signed-in-from-login-link")

    # a reload keeps the session (the code is gone from the URL; nothing to spend again)
    await page.reload()
    await expect(page.get_by_test_id("user-name")).to_have_text("lin 林")
    assert await _stored_token(page) == session

    # the same link again (say, copied from a terminal): refused cleanly, nothing stored
    other = await browser.new_context()
    errors: list[str] = []
    try:
        again = await other.new_page()
        again.on("pageerror", lambda exc: errors.append(str(exc)))
        await again.goto(link)
        await expect(again.get_by_test_id("signin-error")).to_contain_text(
            "already used or has expired"
        )
        await expect(again.get_by_test_id("app-view")).to_be_hidden()
        assert code not in again.url
        assert await _stored_token(again) is None

        # an old-style link with a token in it: refused, removed from the URL, never stored
        await again.goto(f"{live_server.base_url}/?token={api_token}")
        await expect(again.get_by_test_id("signin-error")).to_contain_text("never accepted")
        await expect(again.get_by_test_id("app-view")).to_be_hidden()
        assert api_token not in again.url and "token=" not in again.url
        assert await _stored_token(again) is None

        # the API-token form still signs in
        await again.get_by_test_id("token-input").fill(api_token)
        await again.get_by_test_id("sign-in").click()
        await expect(again.get_by_test_id("user-name")).to_have_text("lin 林")
        assert await _stored_token(again) == api_token
    finally:
        await other.close()
    assert errors == []

    # revoking the session signs the first page out on its next request
    [session_id] = [t.id for t in await users.list_tokens(uid) if t.label == SESSION_TOKEN_LABEL]
    assert await users.revoke_tokens(uid, session_id) == [session_id]
    await page.get_by_test_id("archived-toggle").click()  # a request: the archived threads
    await expect(page.get_by_test_id("signin-error")).to_contain_text("no longer valid")
    assert await _stored_token(page) is None
    await ui.shot("signed-out-after-revoke")
    ui.assert_clean()
