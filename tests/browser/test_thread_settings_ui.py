"""Thread settings in the browser: an inline rename and the "Hidden from recall" toggle, both
through ``PATCH /api/v1/threads/{id}``, visible in the thread list and kept after a reload."""

from __future__ import annotations

import pytest
from playwright.async_api import expect

from tests.browser.conftest import UI, send, wait_idle
from tests.support.server import LiveServer, create_user_with_token, login_link
from yuxi.bootstrap import Container

pytestmark = pytest.mark.browser


async def test_thread_rename_and_recall_toggle_persist_after_reload(
    live_server: LiveServer, container: Container, ui: UI
) -> None:
    uid, token = await create_user_with_token(container, "rita")
    page = ui.page
    api = live_server.client(token)
    await page.goto(await login_link(live_server, container, uid))
    await expect(page.get_by_test_id("user-name")).to_have_text("rita")
    await send(page, "hello there")
    await wait_idle(page)
    item = page.get_by_test_id("thread-item")
    await expect(item).to_have_count(1)
    await expect(item.get_by_test_id("thread-title-text")).to_have_text("hello there")
    thread_id = await item.get_attribute("data-thread-id")
    assert thread_id

    # -- rename inline: Escape cancels, Enter saves ----------------------------------------
    await page.get_by_test_id("rename-thread").click()
    title_input = page.get_by_test_id("thread-title-input")
    await expect(title_input).to_be_focused()
    await expect(title_input).to_have_value("hello there")
    await title_input.fill("not this one")
    await title_input.press("Escape")
    await expect(title_input).to_be_hidden()
    await expect(page.get_by_test_id("thread-title")).to_have_text("hello there")
    await page.get_by_test_id("rename-thread").click()
    renamed = "茶的笔记 <b>tea</b> notes"
    await title_input.fill(renamed)
    async with page.expect_response(
        lambda r: r.url.endswith(f"/api/v1/threads/{thread_id}") and r.request.method == "PATCH"
    ) as patched:
        await title_input.press("Enter")
    assert (await patched.value).ok
    await expect(page.get_by_test_id("thread-title")).to_have_text(renamed)
    await expect(item.get_by_test_id("thread-title-text")).to_have_text(renamed)
    assert await page.locator("#thread-list b, .chat-header b").count() == 0  # text, not markup
    await ui.shot("renamed")

    # -- hide from recall -------------------------------------------------------------------
    toggle = page.get_by_test_id("recall-toggle")
    await expect(toggle).not_to_be_checked()
    await expect(item.get_by_test_id("thread-recall-hidden")).to_have_count(0)
    async with page.expect_response(
        lambda r: r.url.endswith(f"/api/v1/threads/{thread_id}") and r.request.method == "PATCH"
    ) as patched:
        await toggle.click()
    assert (await patched.value).ok
    await expect(toggle).to_be_checked()
    await expect(toggle).to_be_enabled()
    await expect(item.get_by_test_id("thread-recall-hidden")).to_be_visible()
    await ui.shot("hidden-from-recall")

    listed = (await api.get("/api/v1/threads")).json()["threads"]
    assert [(t["title"], t["recall_excluded"]) for t in listed] == [(renamed, True)]

    # -- both survive a reload (read back from the server) ----------------------------------
    await page.reload()
    await expect(page.get_by_test_id("transcript")).to_have_attribute("data-ready", "true")
    await expect(page.get_by_test_id("thread-title")).to_have_text(renamed)
    await expect(item.get_by_test_id("thread-title-text")).to_have_text(renamed)
    await expect(item.get_by_test_id("thread-recall-hidden")).to_be_visible()
    await expect(page.get_by_test_id("recall-toggle")).to_be_checked()
    await ui.shot("after-reload")

    # -- and turning it back on shows again -------------------------------------------------
    await page.get_by_test_id("recall-toggle").click()
    await expect(page.get_by_test_id("recall-toggle")).not_to_be_checked()
    await expect(item.get_by_test_id("thread-recall-hidden")).to_have_count(0)
    listed = (await api.get("/api/v1/threads")).json()["threads"]
    assert [(t["title"], t["recall_excluded"]) for t in listed] == [(renamed, False)]

    # -- a new, empty thread has the toggle off; switching threads keeps each its own --------
    await page.get_by_test_id("new-thread").click()  # a draft until its first message
    await expect(page.get_by_test_id("recall-setting")).to_be_hidden()
    await send(page, "a second thread")
    await expect(page.get_by_test_id("thread-item")).to_have_count(2)
    await wait_idle(page)
    await expect(page.get_by_test_id("recall-toggle")).not_to_be_checked()
    await api.aclose()
    ui.assert_clean()
