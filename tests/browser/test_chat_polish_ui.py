"""The chat's polish in the browser (issue 16): the first-use hint with memory off, Markdown replies
rendered and sanitised, a blank message refused visibly, thread titles cut with the id shown and
copyable, the archived view with Restore, the read-only workspace file browser, and a phone
layout where the transcript has most of the screen."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.async_api import expect

from tests.browser.conftest import UI, send, wait_idle
from tests.browser.screens import review_shot
from tests.support.server import LiveServer, create_user_with_token, login_link
from yuxi.bootstrap import Container

pytestmark = pytest.mark.browser


async def screen(page: Any, name: str) -> None:
    await review_shot(page, f"ui16-{name}")


async def sign_in(live_server: LiveServer, container: Container, ui: UI, name: str) -> Any:
    uid, token = await create_user_with_token(container, name)
    if (ui.page.viewport_size or {}).get("width", 0) > 860:
        await ui.page.set_viewport_size({"width": 1280, "height": 800})
    await ui.page.goto(await login_link(live_server, container, uid))
    await expect(ui.page.get_by_test_id("user-name")).to_have_text(name)
    return live_server.client(token)


async def test_first_use_hint_with_memory_off_points_to_the_switch_and_blank_is_refused(
    live_server: LiveServer, container: Container, ui: UI
) -> None:
    page = ui.page
    api = await sign_in(live_server, container, ui, "hana")
    await expect(page.get_by_test_id("memory-toggle")).not_to_be_checked()
    hint = page.get_by_test_id("memory-off-hint")
    await expect(hint).to_be_visible()
    await expect(hint).to_contain_text("Memory is off")
    await expect(hint).not_to_contain_text("remember: I drink")
    await page.get_by_test_id("memory-hint-switch").click()
    await expect(page.get_by_test_id("memory-toggle")).to_be_focused()
    await screen(page, "1280-memory-off-hint")

    # a blank message is refused where the user looks, and nothing is created or sent
    await page.get_by_test_id("message-input").fill("   \n\t  ")
    await page.get_by_test_id("send").click()
    composer_hint = page.get_by_test_id("composer-hint")
    await expect(composer_hint).to_have_text("Not sent: the message is only blank space.")
    await page.get_by_test_id("message-input").press("Enter")
    await expect(composer_hint).to_be_visible()
    await expect(page.get_by_test_id("message")).to_have_count(0)
    assert (await api.get("/api/v1/threads")).json()["threads"] == []
    await page.get_by_test_id("message-input").fill("")
    await page.get_by_test_id("message-input").type("hi")
    await expect(composer_hint).to_be_hidden()

    # with memory on, the hint suggests remembering instead
    await page.get_by_test_id("memory-toggle").click()
    await expect(page.get_by_test_id("memory-toggle")).to_be_checked()
    await expect(page.get_by_test_id("memory-on-hint")).to_contain_text("remember: I drink")
    await expect(page.get_by_test_id("memory-off-hint")).to_have_count(0)
    await api.aclose()
    ui.assert_clean()


#: Echoed by the offline model ("You said: …", up to 200 characters).
MARKDOWN_PROBE = (
    "**bold words** `code` <script>window.__pwned=1</script> "
    "[bad](javascript:window.__pwned=2) [site](https://example.invalid/p) "
    '<img src=x onerror="window.__pwned=3"> <a onclick="window.__pwned=4">r</a>'
)


async def check_reply_markup(page: Any) -> None:
    reply = page.get_by_test_id("assistant-reply").last
    await expect(reply.locator("strong")).to_have_text("bold words")
    await expect(reply.locator("code")).to_have_text("code")
    # raw HTML from the model shows as text; none of it becomes an element
    await expect(reply).to_contain_text("<script>window.__pwned=1</script>")
    assert (
        await page.locator("#transcript script, #transcript img, #transcript [onclick]").count()
        == 0
    )
    hrefs = await reply.locator("a").evaluate_all("(as) => as.map((a) => a.getAttribute('href'))")
    assert not any((h or "").lower().startswith(("javascript:", "data:")) for h in hrefs), hrefs
    site = reply.locator('a[href="https://example.invalid/p"]')
    await expect(site).to_have_text("site")
    await expect(site).to_have_attribute("rel", "noopener noreferrer")
    await expect(site).to_have_attribute("target", "_blank")
    bad = reply.locator("a", has_text="bad")
    if await bad.count():
        await bad.click()  # an inert link: nothing runs
    assert await page.evaluate("window.__pwned") is None
    # the user's own text is never parsed: the stars stay stars
    mine = page.locator('[data-testid="message"][data-role="user"]').get_by_test_id("message-text")
    await expect(mine).to_have_text(MARKDOWN_PROBE)
    assert await page.locator('[data-role="user"] strong').count() == 0


async def test_markdown_reply_is_rendered_and_sanitised(
    live_server: LiveServer, container: Container, ui: UI
) -> None:
    page = ui.page
    api = await sign_in(live_server, container, ui, "mark")
    await send(page, MARKDOWN_PROBE)
    await wait_idle(page)
    await check_reply_markup(page)
    await screen(page, "1280-markdown-reply")
    # the stored history renders the same way
    await page.reload()
    await expect(page.get_by_test_id("transcript")).to_have_attribute("data-ready", "true")
    await check_reply_markup(page)
    await api.aclose()
    ui.assert_clean()


async def test_titles_are_cut_the_id_is_shown_and_archived_threads_restore(
    live_server: LiveServer, container: Container, ui: UI
) -> None:
    page = ui.page
    await page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    api = await sign_in(live_server, container, ui, "tomo")
    long_title = "茶" * 30 + "a" * 40 + "🍵" * 20 + " tail"  # 95 characters, 215 bytes
    created = (await api.post("/api/v1/threads", json={})).json()
    thread_id = created["thread_id"]
    assert (
        await api.patch(f"/api/v1/threads/{thread_id}", json={"title": long_title})
    ).status_code == 200
    await page.reload()
    item = page.locator(f'[data-testid="thread-item"][data-thread-id="{thread_id}"]')
    shown = await item.get_by_test_id("thread-title-text").text_content()
    assert shown is not None and shown.endswith("…") and len(shown) <= 80
    assert long_title.startswith(shown[:-1])  # cut on a character boundary: no half emoji
    await expect(item).to_have_attribute("title", long_title)

    # the open thread's id is visible and copyable (for "read thread: <id>")
    await item.click()
    await expect(page.get_by_test_id("thread-id")).to_have_text(thread_id)
    await expect(page.get_by_test_id("thread-title")).to_have_attribute("title", long_title)
    await page.get_by_test_id("copy-thread-id").click()
    await expect(page.get_by_test_id("copy-thread-id")).to_have_text("Copied")
    assert await page.evaluate("navigator.clipboard.readText()") == thread_id

    # archive: it leaves the list; the Archived view shows it; Restore brings it back
    await page.get_by_test_id("archive-thread").click()
    await expect(item).to_have_count(0)
    await page.get_by_test_id("archived-toggle").click()
    await expect(page.get_by_test_id("archived-toggle")).to_have_attribute("aria-pressed", "true")
    await expect(item).to_have_count(1)
    await expect(item).to_have_attribute("data-status", "archived")
    await item.click()
    await expect(page.get_by_test_id("thread-archived-note")).to_be_visible()
    await expect(page.get_by_test_id("restore-thread")).to_be_visible()
    await expect(page.get_by_test_id("archive-thread")).to_be_hidden()
    await screen(page, "1280-archived-view")
    await page.get_by_test_id("thread-restore").click()
    await expect(page.get_by_test_id("archived-toggle")).to_have_attribute("aria-pressed", "false")
    await expect(item).to_have_count(1)
    await expect(item).to_have_attribute("aria-current", "true")
    await expect(page.get_by_test_id("thread-archived-note")).to_be_hidden()
    listed = (await api.get("/api/v1/threads")).json()["threads"]
    assert [(t["thread_id"], t["status"]) for t in listed] == [(thread_id, "active")]
    await page.get_by_test_id("archived-toggle").click()
    await expect(page.get_by_test_id("thread-empty")).to_have_text("No archived threads.")
    await api.aclose()
    ui.assert_clean()


async def test_file_browser_lists_workspace_files_and_shows_them_as_text(
    live_server: LiveServer, container: Container, ui: UI
) -> None:
    page = ui.page
    api = await sign_in(live_server, container, ui, "fumi")
    hostile = '<b id="planted">bold?</b> 茶 <script>window.__pwned=5</script>\n'
    for path, text in (("notes/a.md", hostile), ("deep/er/b.txt", "hello")):
        put = await api.put(f"/api/v1/workspace/files/{path}", content=text.encode())
        assert put.status_code == 204, put.text
    await page.get_by_test_id("files-panel-button").click()
    panel = page.get_by_test_id("files-panel")
    await expect(panel).to_be_visible()
    items = panel.get_by_test_id("file-item")
    seeded = ["agents/AGENTS.md", "agents/MEMORY.md", "agents/USER.md"]  # every workspace has them
    await expect(items.get_by_test_id("file-path")).to_have_text(
        [*seeded, "deep/er/b.txt", "notes/a.md"]
    )
    note = panel.locator('[data-testid="file-item"][data-path="notes/a.md"]')
    size = len(hostile.encode())
    await expect(note.get_by_test_id("file-size")).to_have_text(f"{size} bytes")
    await note.click()
    await expect(page.get_by_test_id("file-view")).to_have_attribute("data-loaded", "true")
    await expect(page.get_by_test_id("file-view-path")).to_have_text("notes/a.md")
    assert await page.get_by_test_id("file-view-text").text_content() == hostile
    assert await page.locator("#planted, #files-panel script, #files-panel b").count() == 0
    assert await page.evaluate("window.__pwned") is None
    assert await panel.locator("textarea, input, [contenteditable]").count() == 0  # read-only
    await screen(page, "1280-files-panel")

    # a file the agent writes shows once its run has ended
    await send(page, "write file notes/new.md: hi")
    await page.get_by_test_id("approve").click()
    await wait_idle(page)
    await expect(items.get_by_test_id("file-path")).to_have_text(
        [*seeded, "deep/er/b.txt", "notes/a.md", "notes/new.md"]
    )
    # opening the Memory panel takes the Files panel's place
    await page.get_by_test_id("memory-panel-button").click()
    await expect(panel).to_be_hidden()
    await expect(page.get_by_test_id("memory-panel")).to_be_visible()
    await api.aclose()
    ui.assert_clean()


async def test_phone_layout_gives_the_transcript_most_of_the_screen(
    live_server: LiveServer, container: Container, ui: UI
) -> None:
    page = ui.page
    await page.set_viewport_size({"width": 390, "height": 844})
    api = await sign_in(live_server, container, ui, "pia")
    await screen(page, "390-empty")
    await send(page, "hello from a phone, **with** markdown")
    await wait_idle(page)
    await expect(page.get_by_test_id("assistant-reply").locator("strong")).to_have_text("with")
    transcript = await page.get_by_test_id("transcript").bounding_box()
    assert transcript is not None and transcript["height"] >= 0.6 * 844, transcript
    assert transcript["width"] >= 380, transcript
    await expect(page.get_by_test_id("sidebar")).to_be_hidden()
    await screen(page, "390-conversation")

    # the thread list is a drawer: opened by "Threads", closed by choosing a thread
    await page.get_by_test_id("threads-toggle").click()
    await expect(page.get_by_test_id("sidebar")).to_be_visible()
    await expect(page.get_by_test_id("threads-toggle")).to_have_attribute("aria-expanded", "true")
    await screen(page, "390-drawer")
    await page.get_by_test_id("drawer-close").click()
    await expect(page.get_by_test_id("sidebar")).to_be_hidden()
    await expect(page.get_by_test_id("threads-toggle")).to_have_attribute("aria-expanded", "false")
    await page.get_by_test_id("threads-toggle").click()
    await page.get_by_test_id("new-thread").click()
    await expect(page.get_by_test_id("sidebar")).to_be_hidden()
    await page.get_by_test_id("threads-toggle").click()
    await page.get_by_test_id("thread-item").filter(has_text="hello from a phone").click()
    await expect(page.get_by_test_id("sidebar")).to_be_hidden()
    await expect(page.get_by_test_id("assistant-reply").last.locator("strong")).to_have_text("with")

    # the Memory panel opens over the whole screen with its close at hand, and closes again
    await page.get_by_test_id("memory-panel-button").click()
    memory = await page.get_by_test_id("memory-panel").bounding_box()
    assert memory is not None and memory["width"] >= 389 and memory["height"] >= 843, memory
    close = await page.get_by_test_id("memory-close").bounding_box()
    assert close is not None and close["y"] < 80 and close["x"] + close["width"] <= 390, close
    await screen(page, "390-memory-panel")
    await page.get_by_test_id("memory-close").click()
    await expect(page.get_by_test_id("memory-panel")).to_be_hidden()
    await expect(page.get_by_test_id("transcript")).to_be_visible()
    # the Files panel too; Escape closes it
    await page.get_by_test_id("files-panel-button").click()
    await expect(page.get_by_test_id("files-panel")).to_be_visible()
    await screen(page, "390-files-panel")
    await page.keyboard.press("Escape")
    await expect(page.get_by_test_id("files-panel")).to_be_hidden()
    await api.aclose()
    ui.assert_clean()
