"""Two tabs on one account (issue 36 §2), in a real Chromium against a real ``yuxi serve``,
PostgreSQL and the offline model, on a desktop (1280x800) and a phone (390x844):

* a decision made in tab B is what tab A shows when its still-live card is clicked the other
  way: "Already approved in another tab or session — the file was written" (never "Rejected"
  while the file was written), and the reverse; the server kept one decision;
* the memory switch, a rename, a new message, an approval answered, an archive and a delete made
  in tab B show in tab A when it is looked at again, and so do a restore and a delete while tab
  A shows the Trash. Headless Chromium keeps every page visible
  and focused, so the test fires the ``visibilitychange`` / ``focus`` event the browser fires
  when a user comes back to a tab; everything after it (the requests, the rendering) is the
  app's own.

Each tab ends clean: no script error, no console error, no CSP violation.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from playwright.async_api import expect

from tests.browser.conftest import UI, send, wait_idle
from tests.browser.screens import review_shot
from tests.support.server import LiveServer, create_user_with_token, login_link
from yuxi.bootstrap import Container

pytestmark = pytest.mark.browser

VIEWPORTS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}


@pytest.fixture(params=list(VIEWPORTS))
def viewport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class Tab:
    """A second page of the same browser context (the same signed-in account)."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.errors: list[str] = []
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        page.on(
            "console",
            lambda msg: (
                self.errors.append(msg.text)
                if msg.type == "error" and "Failed to load resource" not in msg.text
                else None
            ),
        )


@pytest.fixture
async def api_and_tab_b(
    live_server: LiveServer, container: Container, ui: UI, viewport: str
) -> AsyncIterator[tuple[httpx.AsyncClient, Tab]]:
    uid, token = await create_user_with_token(container, f"tabs-{viewport}")
    api = live_server.client(token)
    assert (await api.put("/api/v1/me/config", json={"enable_memory": True})).status_code == 200
    await ui.page.set_viewport_size(VIEWPORTS[viewport])
    await ui.page.goto(await login_link(live_server, container, uid))
    await expect(ui.page.get_by_test_id("user-name")).to_have_text(f"tabs-{viewport}")
    tab_b = Tab(await ui.page.context.new_page())
    await tab_b.page.set_viewport_size(VIEWPORTS[viewport])
    try:
        yield api, tab_b
    finally:
        await api.aclose()


async def open_in_b(live_server: LiveServer, tab_b: Tab, thread_id: str) -> Any:
    """Tab B: the app at ``thread_id``, signed in with the token the context remembers."""
    page = tab_b.page
    await page.goto(f"{live_server.base_url}/#thread={thread_id}")
    await expect(page.get_by_test_id("transcript")).to_have_attribute("data-ready", "true")
    return page


async def open_thread_id(page: Any) -> str:
    await expect(page.get_by_test_id("thread-id")).not_to_have_text("")
    return str(await page.get_by_test_id("thread-id").text_content())


async def come_back(page: Any, event: str = "visibilitychange") -> None:
    """The user returns to the tab: the event the browser fires, and the refresh it starts."""
    await page.wait_for_timeout(1600)  # past the app's coalescing of focus + visibility
    target = "document" if event == "visibilitychange" else "window"
    async with page.expect_response(lambda r: r.url.endswith("/api/v1/me/config")):
        await page.evaluate(f"{target}.dispatchEvent(new Event('{event}'))")


async def shot(page: Any, viewport: str, name: str) -> None:
    await review_shot(page, f"tabs-{VIEWPORTS[viewport]['width']}-{name}")


@pytest.mark.parametrize(("in_b", "in_a"), [("approve", "reject"), ("reject", "approve")])
async def test_a_decision_made_in_another_tab_is_what_this_tab_shows(
    live_server: LiveServer,
    ui: UI,
    viewport: str,
    api_and_tab_b: tuple[httpx.AsyncClient, Tab],
    in_b: str,
    in_a: str,
) -> None:
    api, tab_b = api_and_tab_b
    page_a = ui.page
    await send(page_a, "write file notes/two.md: written from tab B")
    card_a = page_a.locator('[data-testid="approval-card"][data-state="pending"]')
    await expect(card_a).to_be_visible()
    thread_id = await open_thread_id(page_a)

    page_b = await open_in_b(live_server, tab_b, thread_id)
    card_b = page_b.locator('[data-testid="approval-card"]')
    await card_b.get_by_test_id(in_b).click()
    await expect(card_b).to_have_attribute("data-outcome", "completed")
    written = in_b == "approve"
    done = "the file was written." if written else "the file was not written."
    word = "Approved" if written else "Rejected"
    await expect(card_b.get_by_test_id("approval-status")).to_have_text(f"{word} — {done}")

    # Tab A never looked again: its card is still live, and the user clicks the other way.
    await expect(card_a.get_by_test_id(in_a)).to_be_enabled()
    async with page_a.expect_response(lambda r: r.url.endswith("/resume")) as answer:
        await card_a.get_by_test_id(in_a).click()
    assert (await answer.value).status == 409
    decided = page_a.locator('[data-testid="approval-card"][data-decided-elsewhere="true"]')
    await expect(decided).to_have_attribute("data-outcome", "completed")
    await expect(decided).to_have_attribute("data-state", "approved" if written else "rejected")
    await expect(decided.locator(".approval-title")).to_have_text(f"Already {word.lower()}")
    await expect(decided.get_by_test_id("approval-status")).to_have_text(
        f"Already {word.lower()} in another tab or session — {done}"
    )
    other = "Rejected" if written else "Approved"
    await expect(decided).not_to_contain_text(other)
    tool = page_a.locator('[data-testid="tool-event"][data-tool-name="write_workspace_file"]')
    await expect(tool).to_have_attribute("data-status", "success" if written else "error")
    await wait_idle(page_a)
    await shot(page_a, viewport, f"already-{word.lower()}")
    await ui.shot(f"already-{word.lower()}")

    got = await api.get("/api/v1/workspace/files/notes/two.md")
    assert (got.status_code, got.text if written else "") == (
        (200, "written from tab B") if written else (404, "")
    )
    runs = (await api.get(f"/api/v1/threads/{thread_id}/runs")).json()["runs"]
    assert [r["run_type"] for r in runs].count("resume") == 1  # one decision, kept

    # Both tabs, reloaded, show the one decision from the server's history.
    for page in (page_a, page_b):
        await page.reload()
        await expect(page.get_by_test_id("transcript")).to_have_attribute("data-ready", "true")
        stored = page.get_by_test_id("approval-card")
        await expect(stored).to_have_count(1)
        await expect(stored.get_by_test_id("approval-status")).to_have_text(f"{word} — {done}")
    await shot(page_a, viewport, f"{word.lower()}-after-reload")
    assert tab_b.errors == []
    ui.assert_clean()


async def test_switch_and_thread_state_follow_another_tab(
    live_server: LiveServer,
    ui: UI,
    viewport: str,
    api_and_tab_b: tuple[httpx.AsyncClient, Tab],
) -> None:
    api, tab_b = api_and_tab_b
    page_a = ui.page
    await send(page_a, "first words")
    await wait_idle(page_a)
    thread_id = await open_thread_id(page_a)
    page_b = await open_in_b(live_server, tab_b, thread_id)
    await expect(page_a.get_by_test_id("memory-toggle")).to_be_checked()

    # -- the memory switch, turned off in tab B --------------------------------------------------
    await page_b.get_by_test_id("memory-toggle").click()
    await expect(page_b.get_by_test_id("memory-toggle")).not_to_be_checked()
    await expect(page_a.get_by_test_id("memory-toggle")).to_be_checked()  # not looked at yet
    await come_back(page_a)
    await expect(page_a.get_by_test_id("memory-toggle")).not_to_be_checked()
    await expect(page_a.locator("#memory-state")).to_have_text("off")
    await shot(page_a, viewport, "memory-off-from-other-tab")

    # -- a rename and a new message in tab B -----------------------------------------------------
    renamed = await api.patch(f"/api/v1/threads/{thread_id}", json={"title": "改名 in tab B"})
    assert renamed.status_code == 200, renamed.text
    await send(page_b, "said in tab B")
    await wait_idle(page_b)
    await come_back(page_a, "focus")
    await expect(page_a.get_by_test_id("thread-title")).to_have_text("改名 in tab B")
    await expect(
        page_a.get_by_test_id("message-text").filter(has_text="said in tab B")
    ).to_have_count(1)

    # -- an approval answered in tab B: tab A's waiting card becomes the decision ----------------
    await send(page_a, "write file notes/back.md: answered elsewhere")
    waiting = page_a.locator('[data-testid="approval-card"][data-state="pending"]')
    await expect(waiting).to_be_visible()
    await page_b.reload()
    await expect(page_b.get_by_test_id("transcript")).to_have_attribute("data-ready", "true")
    card_b = page_b.locator('[data-testid="approval-card"][data-state="pending"]')
    await card_b.get_by_test_id("approve").click()
    await expect(page_b.get_by_test_id("approval-card").last).to_have_attribute(
        "data-outcome", "completed"
    )
    await expect(waiting).to_be_visible()  # tab A has not looked yet
    await come_back(page_a)
    await expect(waiting).to_have_count(0)
    answered = page_a.locator('[data-testid="approval-card"][data-state="approved"]')
    await expect(answered.get_by_test_id("approval-status")).to_have_text(
        "Approved — the file was written."
    )
    await expect(page_a.get_by_test_id("send")).to_be_enabled()
    await shot(page_a, viewport, "answered-in-other-tab")

    # -- archived in tab B: tab A leaves it, and says where it went -------------------------------
    assert (await api.post(f"/api/v1/threads/{thread_id}/archive")).status_code == 200
    await come_back(page_a)
    await expect(page_a.get_by_test_id("notice-text")).to_contain_text(
        "archived in another tab or session"
    )
    await expect(page_a.get_by_test_id("thread-item")).to_have_count(0)
    await expect(page_a.get_by_test_id("thread-title")).to_have_text("New thread")
    await shot(page_a, viewport, "archived-from-other-tab")

    # -- deleted in tab B while open in tab A ------------------------------------------------------
    assert (await api.post(f"/api/v1/threads/{thread_id}/unarchive")).status_code == 200
    await page_a.goto(f"{live_server.base_url}/#thread={thread_id}")
    await page_a.reload()  # a hash change alone is no new page load
    await expect(page_a.get_by_test_id("transcript")).to_have_attribute("data-ready", "true")
    await expect(page_a.get_by_test_id("thread-title")).to_have_text("改名 in tab B")
    assert (await api.delete(f"/api/v1/threads/{thread_id}")).status_code in (200, 204)
    await come_back(page_a)
    await expect(page_a.get_by_test_id("notice-text")).to_contain_text(
        "deleted in another tab or session"
    )
    await expect(page_a.get_by_test_id("thread-item")).to_have_count(0)
    await expect(page_a.get_by_test_id("message-text")).to_have_count(0)
    await shot(page_a, viewport, "deleted-from-other-tab")

    # -- the Trash view open in tab A follows restores and deletes made elsewhere ----------------
    if not await page_a.get_by_test_id("sidebar").is_visible():  # a phone: the list is a drawer
        await page_a.get_by_test_id("threads-toggle").click()
    await page_a.get_by_test_id("trash-toggle").click()
    trashed = page_a.get_by_test_id("trash-item").filter(has_text="改名 in tab B")
    await expect(trashed).to_have_count(1)
    restored = await api.post(f"/api/v1/trash/{thread_id}/restore")
    assert restored.status_code == 200, restored.text
    await come_back(page_a)
    await expect(trashed).to_have_count(0)
    assert (await api.delete(f"/api/v1/threads/{thread_id}")).status_code in (200, 204)
    await come_back(page_a, "focus")
    await expect(trashed).to_have_count(1)
    await shot(page_a, viewport, "trash-from-other-tab")
    assert tab_b.errors == []
    ui.assert_clean()
