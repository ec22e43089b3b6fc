"""The chat's flow in the browser, on a desktop (1280x800) and a phone (390x844):

* after Approve or Reject on an approval card the transcript follows the resumed run to its end,
  as it does for any run (the resumed run's receipt lands above the card, which alone used to
  push the end out of reach of the "stay at the bottom" rule);
* an archived thread takes no messages: its box and Send are disabled, saying why, until it is
  restored or another thread is opened;
* "+ New thread" opens a draft: the thread is created by the first message sent, repeated clicks
  create nothing, and a first message the server refuses leaves no empty thread behind;
* a message over the server's size limit (UTF-8 bytes, ``RUN_INPUT_MAX_BYTES``) is refused
  before sending, in plain words, and stays in the box; the limit is the server's to the byte.

Each test ends with ``ui.assert_clean()``: no script error, no console error, no CSP violation.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from playwright.async_api import expect

from tests.browser.conftest import UI, send, wait_idle
from tests.browser.screens import record_posts, review_shot
from tests.support.server import LiveServer, create_user_with_token, login_link
from yuxi.bootstrap import Container
from yuxi.limits import RUN_INPUT_MAX_BYTES

pytestmark = pytest.mark.browser

VIEWPORTS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}


@pytest.fixture(params=list(VIEWPORTS))
def viewport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def screen(page: Any, viewport: str, name: str) -> None:
    await review_shot(page, f"chatflow-{VIEWPORTS[viewport]['width']}-{name}")


async def sign_in(
    live_server: LiveServer,
    container: Container,
    ui: UI,
    name: str,
    viewport: str,
    *,
    memory: bool = False,
) -> httpx.AsyncClient:
    uid, token = await create_user_with_token(container, name)
    api = live_server.client(token)
    if memory:
        assert (await api.put("/api/v1/me/config", json={"enable_memory": True})).status_code == 200
    await ui.page.set_viewport_size(VIEWPORTS[viewport])
    await ui.page.goto(await login_link(live_server, container, uid))
    await expect(ui.page.get_by_test_id("user-name")).to_have_text(name)
    return api


async def in_sidebar(page: Any, viewport: str) -> None:
    """On a phone the thread list is a drawer: open it first."""
    if viewport == "phone" and not await page.get_by_test_id("sidebar").is_visible():
        await page.get_by_test_id("threads-toggle").click()
        await expect(page.get_by_test_id("sidebar")).to_be_visible()


async def click_in_sidebar(page: Any, viewport: str, locator: Any) -> None:
    await in_sidebar(page, viewport)
    await locator.click()


async def thread_with_message(api: httpx.AsyncClient, text: str) -> str:
    thread_id = str((await api.post("/api/v1/threads", json={})).json()["thread_id"])
    run = await api.post(f"/api/v1/threads/{thread_id}/runs?wait=true", json={"input": text})
    assert run.status_code == 200 and run.json()["status"] == "completed", run.text
    return thread_id


async def listed_threads(api: httpx.AsyncClient) -> list[dict[str, Any]]:
    body = (await api.get("/api/v1/threads?include_archived=true")).json()
    return list(body["threads"])


async def distance_from_end(page: Any) -> float:
    """How far the transcript's view is from its end, in pixels (0: at the end)."""
    return float(
        await page.get_by_test_id("transcript").evaluate(
            "(t) => t.scrollHeight - t.scrollTop - t.clientHeight"
        )
    )


# -- 1. after a decision the transcript follows the resumed run to its end ------------------------


async def decide_and_follow(page: Any, other: str, wish: str, decision: str) -> None:
    await send(page, f"read thread: {other}\nremember: {wish}")
    card = page.locator('[data-testid="approval-card"][data-state="pending"]')
    await expect(card).to_be_visible()
    await expect(card.get_by_test_id("approval-memory-content")).to_have_text(wish)
    assert await distance_from_end(page) < 2  # the card is shown at the end
    await card.get_by_test_id(decision).click()
    state = {"approve": "approved", "reject": "rejected"}[decision]
    decided = page.locator(
        f'[data-testid="approval-card"][data-state="{state}"][data-outcome="completed"]'
    )
    await expect(decided).to_have_count(1)
    await wait_idle(page)
    # the whole resumed run came in below the card; the view followed it to the end
    usage = page.get_by_test_id("run-usage").last
    card_box = await decided.bounding_box()
    usage_box = await usage.bounding_box()
    assert card_box is not None and usage_box is not None
    assert usage_box["y"] > card_box["y"] + card_box["height"]
    assert await distance_from_end(page) < 2, await distance_from_end(page)
    await expect(usage).to_be_in_viewport()
    await expect(page.get_by_test_id("assistant-reply").last).to_be_in_viewport()


async def test_after_approve_or_reject_the_view_follows_the_run_to_its_end(
    live_server: LiveServer, container: Container, ui: UI, viewport: str
) -> None:
    page = ui.page
    api = await sign_in(live_server, container, ui, "ada", viewport, memory=True)
    other = await thread_with_message(api, "my old note: " + "window seats are cold. " * 12)
    await page.reload()
    await expect(page.get_by_test_id("transcript")).to_have_attribute("data-ready", "true")
    await click_in_sidebar(page, viewport, page.get_by_test_id("new-thread"))

    await decide_and_follow(page, other, "I prefer aisle seats", "approve")
    await expect(page.get_by_test_id("memory-receipt")).to_have_count(1)
    await screen(page, viewport, "after-approve")
    await decide_and_follow(page, other, "I prefer window seats", "reject")
    await screen(page, viewport, "after-reject")
    await api.aclose()
    ui.assert_clean()


# -- 2. an archived thread takes no messages until it is restored -------------------------------

ARCHIVED_PLACEHOLDER = "This thread is archived: restore it to send messages."


async def expect_composer_open(page: Any) -> None:
    await expect(page.get_by_test_id("message-input")).to_be_enabled()
    await expect(page.get_by_test_id("send")).to_be_enabled()
    await expect(page.get_by_test_id("message-input")).not_to_have_attribute(
        "placeholder", ARCHIVED_PLACEHOLDER
    )


async def expect_composer_closed(page: Any) -> None:
    await expect(page.get_by_test_id("thread-archived-note")).to_be_visible()
    await expect(page.get_by_test_id("message-input")).to_be_disabled()
    await expect(page.get_by_test_id("send")).to_be_disabled()
    await expect(page.get_by_test_id("message-input")).to_have_attribute(
        "placeholder", ARCHIVED_PLACEHOLDER
    )
    await expect(page.get_by_test_id("composer")).to_have_attribute("data-state", "archived")


async def test_an_archived_thread_takes_no_messages_until_restored(
    live_server: LiveServer, container: Container, ui: UI, viewport: str
) -> None:
    page = ui.page
    api = await sign_in(live_server, container, ui, "arlo", viewport)
    kept = await thread_with_message(api, "a thread that stays")
    archived = await thread_with_message(api, "a thread to archive")
    await page.reload()
    # The start-up opens the thread the address names and closes the drawer as it does: open
    # the drawer only after that (a drawer opened sooner is closed again under a slow machine).
    await expect(page.get_by_test_id("transcript")).to_have_attribute("data-ready", "true")
    item = page.locator(f'[data-testid="thread-item"][data-thread-id="{archived}"]')
    await click_in_sidebar(page, viewport, item)
    await expect(item).to_have_attribute("aria-current", "true")
    await expect_composer_open(page)
    await page.get_by_test_id("archive-thread").click()
    await expect(item).to_have_count(0)
    await expect_composer_open(page)  # the archived thread is no longer open

    # opened from the Archived view: the box and Send are disabled, and say why
    await click_in_sidebar(page, viewport, page.get_by_test_id("archived-toggle"))
    await click_in_sidebar(page, viewport, item)
    await expect(page.get_by_test_id("transcript")).to_have_attribute("data-ready", "true")
    await expect_composer_closed(page)
    await page.get_by_test_id("message-input").press("Enter")  # nothing happens
    await screen(page, viewport, "archived-composer")

    # another thread opened: open again
    await click_in_sidebar(page, viewport, page.get_by_test_id("archived-toggle"))
    await click_in_sidebar(
        page, viewport, page.locator(f'[data-testid="thread-item"][data-thread-id="{kept}"]')
    )
    await expect(page.get_by_test_id("thread-archived-note")).to_be_hidden()
    await expect_composer_open(page)

    # back to the archived one, restored from its header: open again, and a message goes
    await click_in_sidebar(page, viewport, page.get_by_test_id("archived-toggle"))
    await click_in_sidebar(page, viewport, item)
    await expect_composer_closed(page)
    await page.get_by_test_id("restore-thread").click()
    await expect(page.get_by_test_id("thread-archived-note")).to_be_hidden()
    await expect(item).to_have_attribute("aria-current", "true")
    await expect_composer_open(page)
    await send(page, "back again")
    await wait_idle(page)
    await expect(page.get_by_test_id("assistant-reply").last).to_contain_text("back again")
    await expect(page.get_by_test_id("error-banner")).to_be_hidden()
    assert {t["thread_id"]: t["status"] for t in await listed_threads(api)} == {
        kept: "active",
        archived: "active",
    }
    await screen(page, viewport, "restored-composer")
    await api.aclose()
    ui.assert_clean()


# -- 3. "+ New thread" is a draft until the first message ----------------------------------------


async def expect_draft(page: Any) -> None:
    await expect(page.get_by_test_id("thread-title")).to_have_text("New thread")
    await expect(page.get_by_test_id("thread-id-row")).to_be_hidden()
    await expect(page.locator('[data-testid="thread-item"][aria-current="true"]')).to_have_count(0)
    await expect(
        page.locator('[data-testid="empty-transcript"][data-kind="start"]')
    ).to_be_visible()
    await expect(page.get_by_test_id("message")).to_have_count(0)


async def test_new_thread_is_a_draft_until_the_first_message_is_sent(
    live_server: LiveServer, container: Container, ui: UI, viewport: str
) -> None:
    page = ui.page
    api = await sign_in(live_server, container, ui, "nell", viewport)
    created = record_posts(page, lambda url: url.endswith("/api/v1/threads"))
    new_thread = page.get_by_test_id("new-thread")
    await expect_draft(page)
    for _ in range(3):
        await click_in_sidebar(page, viewport, new_thread)
        await expect(page.get_by_test_id("message-input")).to_be_focused()
        if viewport == "phone":
            await expect(page.get_by_test_id("sidebar")).to_be_hidden()
    await expect_draft(page)
    assert created == [] and await listed_threads(api) == []

    # the first message creates the thread
    await send(page, "hello, first thread")
    await wait_idle(page)
    first = page.locator('[data-testid="thread-item"][aria-current="true"]')
    await expect(first).to_contain_text("hello, first thread")
    assert len(created) == 1 and len(await listed_threads(api)) == 1

    # "+ New thread" again: the draft, however often it is clicked
    for _ in range(3):
        await click_in_sidebar(page, viewport, new_thread)
    await expect_draft(page)
    await in_sidebar(page, viewport)
    await expect(page.get_by_test_id("thread-item")).to_have_count(1)
    await screen(page, viewport, "new-thread-draft")
    if viewport == "phone":
        await page.get_by_test_id("drawer-close").click()
    assert len(created) == 1 and len(await listed_threads(api)) == 1

    # a first message the server refuses (a NUL character) leaves no empty thread behind
    await page.get_by_test_id("message-input").fill("bad \x00 byte")
    await page.get_by_test_id("send").click()
    await expect(page.get_by_test_id("error-text")).to_contain_text("Not sent")
    await expect(page.get_by_test_id("message-input")).to_have_value("bad \x00 byte")
    await expect_draft(page)
    assert len(created) == 2
    assert [t["title"] for t in await listed_threads(api)] == ["hello, first thread"]
    await in_sidebar(page, viewport)
    await expect(page.get_by_test_id("thread-item")).to_have_count(1)
    await screen(page, viewport, "refused-first-message")
    if viewport == "phone":
        await page.get_by_test_id("drawer-close").click()

    # and the draft still works
    await send(page, "hello, second thread")
    await wait_idle(page)
    await expect(page.locator('[data-testid="thread-item"][aria-current="true"]')).to_contain_text(
        "hello, second thread"
    )
    assert len(await listed_threads(api)) == 2
    await api.aclose()
    ui.assert_clean()


# -- 4. a message over the size limit is refused before sending, in plain words -----------------


def too_long_hint(size: int) -> str:
    return f"Not sent: this message is {size:,} bytes; the limit is {RUN_INPUT_MAX_BYTES:,} bytes"


async def test_a_message_over_the_limit_is_refused_in_plain_words_and_kept(
    live_server: LiveServer, container: Container, ui: UI, viewport: str
) -> None:
    page = ui.page
    api = await sign_in(live_server, container, ui, "lena", viewport)
    runs = record_posts(page, lambda url: "/runs" in url)
    box = page.get_by_test_id("message-input")
    hint = page.get_by_test_id("composer-hint")

    # a huge paste: refused at once, kept in the box, nothing created or sent
    pasted = "x" * 300_000
    await box.fill(pasted)
    await page.get_by_test_id("send").click()
    await expect(hint).to_contain_text(too_long_hint(300_000))
    await expect(hint).to_contain_text("your text is still in the box")
    assert await box.evaluate("(b) => b.value.length") == 300_000
    await expect(page.get_by_test_id("error-banner")).to_be_hidden()
    await screen(page, viewport, "too-long")
    assert runs == [] and await listed_threads(api) == []

    # the limit is in UTF-8 bytes, exactly the server's: 茶 is 3 bytes
    cjk, rest = divmod(RUN_INPUT_MAX_BYTES, 3)
    at_limit = "茶" * cjk + "a" * rest
    assert len(at_limit.encode()) == RUN_INPUT_MAX_BYTES
    over = at_limit + "a"
    await box.fill(over)
    await box.press("Enter")
    await expect(hint).to_contain_text(too_long_hint(RUN_INPUT_MAX_BYTES + 1))
    over_cjk = "茶" * (cjk + 1)
    assert len(over_cjk.encode()) == RUN_INPUT_MAX_BYTES + 1
    await box.fill(over_cjk)
    await box.press("Enter")
    await expect(hint).to_contain_text(too_long_hint(RUN_INPUT_MAX_BYTES + 1))
    await expect(box).to_have_value(over_cjk)
    assert runs == []

    # n bytes: sent, and taken by the server
    await box.fill(at_limit)
    await box.press("Enter")
    await expect(hint).to_be_hidden()
    sent = page.locator('[data-role="user"][data-run-id]')  # the run was created
    await expect(sent.get_by_test_id("message-text")).to_have_text(at_limit)
    await expect(page.get_by_test_id("assistant-reply")).to_contain_text("You said")
    await wait_idle(page)
    await expect(page.get_by_test_id("error-banner")).to_be_hidden()
    [thread] = await listed_threads(api)
    [run] = (await api.get(f"/api/v1/threads/{thread['thread_id']}/runs")).json()["runs"]
    assert run["status"] == "completed", run
    assert len(runs) == 1
    await api.aclose()
    ui.assert_clean()
