"""Fixes found by an exploratory review of the memory panel and the thread delete dialog, in a real
Chromium against a real ``yuxi serve``, PostgreSQL and the offline model:

* the error banner takes its own row above the top bar, so it never covers a control (1280x800
  and 390x844, the phone's full-screen memory panel included);
* "Also forget these lines" with the memory panel closed says what it did in the app's notice,
  with Undo there; the notice goes away on its own or when dismissed;
* the texts name the tab as it is called (Versions), and the delete dialog says what a delete
  really does (a soft delete: the messages stay in the account export);
* the versions list quotes real thread titles only, never its placeholder;
* a failed load of the panel leaves no blank meters, and the panel loads again when reopened or
  when a run has settled (the app has heard from the server), without Reload.

Requests are made to fail with ``page.route`` (their "Failed to load resource" console lines are
ours); otherwise every test ends with ``ui.assert_clean()``. Screenshots for review only when
asked for: ``YUXI_UI_SCREENS=dir``.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.async_api import expect

from tests.browser.conftest import UI, send, wait_idle
from tests.browser.memory_helpers import MEMORY, memory_text, open_app, open_panel, put_memory
from tests.browser.screens import review_shot
from tests.support.server import LiveServer
from yuxi.bootstrap import Container

pytestmark = pytest.mark.browser

WIDE = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}

#: banner.js's NOTICE_MS, and a margin.
NOTICE_GONE_MS = 13_000

DELETE_MESSAGE = (
    "It goes to the trash (at the foot of the thread list), where you can restore it for 30 days; "
    "then it is removed for good with its messages, tool calls and runs. Until then it stays in "
    "your account export, and the assistant can no longer find or read it."
)

#: Each named control whose centre is not the control itself (or inside it) is covered.
HIT_TEST = """(ids) => ids.flatMap((id) => {
  const node = document.querySelector(`[data-testid="${id}"]`);
  if (!node || !node.getClientRects().length) return [];
  const r = node.getBoundingClientRect();
  const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  if (hit && (hit === node || node.contains(hit))) return [];
  return [`${id} is covered by ${hit ? (hit.id || hit.className || hit.tagName) : 'nothing'}`];
})"""

TOP_BAR = [
    "threads-toggle",
    "memory-toggle",
    "memory-panel-button",
    "files-panel-button",
    "account-button",
    "sign-out",
]


async def screen(page: Any, name: str) -> None:
    await review_shot(page, f"memfix-{name}")


async def covered(page: Any, ids: list[str]) -> list[str]:
    result: list[str] = await page.evaluate(HIT_TEST, ids)
    return result


async def remember(page: Any, text: str) -> None:
    """Send ``remember: text`` and wait for its receipt (the run has written) and the end."""
    await send(page, f"remember: {text}")
    receipt = page.get_by_test_id("memory-receipt")
    await expect(receipt.filter(has_text=text)).to_have_attribute("data-state", "saved")
    await wait_idle(page)


async def delete_forgetting(page: Any, line: str) -> None:
    """Delete the open thread, ticking "Also forget" for the one line it wrote."""
    await page.get_by_test_id("delete-thread").click()
    dialog = page.get_by_test_id("confirm-dialog")
    await expect(dialog.get_by_test_id("forget-line")).to_have_text([line])
    await dialog.get_by_test_id("forget-memory").check()
    await page.get_by_test_id("confirm-ok").click()


def is_memory_load(url: str) -> bool:
    """The two requests of a panel load: the entry view and the raw file."""
    path = url.split("?", 1)[0]
    return path.endswith("/api/v1/memory") or path.endswith(MEMORY)


async def test_the_error_banner_never_covers_the_top_bar(
    live_server: LiveServer, container: Container, ui: UI
) -> None:
    page = ui.page
    await page.set_viewport_size(WIDE)
    await open_app(live_server, container, ui, "abel")
    banner = page.get_by_test_id("error-banner")

    async def fail_switch(route: Any) -> None:
        await route.abort()

    # the memory switch cannot be saved: the banner says so
    await page.route("**/api/v1/me/config", fail_switch)
    await page.get_by_test_id("memory-toggle").click()
    await expect(banner).to_be_visible()
    await expect(page.get_by_test_id("error-text")).to_have_text(
        "Could not change the memory switch: Cannot reach the server."
    )
    await page.unroute("**/api/v1/me/config", fail_switch)
    assert await covered(page, TOP_BAR) == []
    await screen(page, "1280-banner")

    # "View memory" takes the click at once (it was the banner's before), and so do the others
    await page.get_by_test_id("memory-panel-button").click(timeout=3_000)
    await expect(page.get_by_test_id("memory-panel")).to_have_attribute("data-loaded", "true")
    assert await covered(page, [*TOP_BAR, "memory-close", "memory-reload"]) == []
    await page.get_by_test_id("files-panel-button").click(timeout=3_000)
    await expect(page.get_by_test_id("files-panel")).to_be_visible()
    await page.get_by_test_id("files-close").click()

    # on a phone: the top bar, then the full-screen panel with its close button, stay clear
    await page.set_viewport_size(PHONE)
    await expect(banner).to_be_visible()
    assert await covered(page, TOP_BAR) == []
    await screen(page, "390-banner")
    await page.get_by_test_id("memory-panel-button").click(timeout=3_000)
    await expect(page.get_by_test_id("memory-panel")).to_have_attribute("data-loaded", "true")
    assert await covered(page, ["memory-close", "memory-tab-versions", "error-close"]) == []
    await screen(page, "390-banner-memory-panel")
    await page.get_by_test_id("memory-close").click()
    await page.get_by_test_id("threads-toggle").click()
    assert await covered(page, ["drawer-close", "new-thread", "error-close"]) == []
    await page.get_by_test_id("drawer-close").click()

    # dismissed, the banner gives its row back
    await page.get_by_test_id("error-close").click()
    await expect(banner).to_be_hidden()
    top = await page.locator(".topbar").bounding_box()
    assert top is not None and top["y"] == 0, top
    ui.assert_clean()


async def test_forgetting_with_a_deleted_thread_shows_a_notice_with_undo(
    live_server: LiveServer, container: Container, ui: UI
) -> None:
    page = ui.page
    await page.clock.install()  # the notice's timeout, fast-forwarded below
    await page.set_viewport_size(WIDE)
    api = await open_app(live_server, container, ui, "ines")
    await put_memory(api, "mine: keep me\n")
    line = "I drink oolong tea 乌龙"
    await remember(page, line)
    dialog = page.get_by_test_id("confirm-dialog")
    notice = page.get_by_test_id("notice")
    undo = page.get_by_test_id("notice-action")

    # -- the dialog says what a delete does and names the Versions tab --------------------------
    await page.get_by_test_id("delete-thread").click()
    await expect(dialog).to_be_visible()
    await expect(page.get_by_test_id("confirm-message")).to_have_text(DELETE_MESSAGE)
    choice = dialog.locator(".forget-choice")
    await expect(choice).to_have_text(
        "Also forget this line (you can undo this, or restore it later from Versions in the "
        "memory panel; restoring the thread from the trash does not bring it back)"
    )
    await expect(dialog).not_to_contain_text("History")
    await screen(page, "1280-delete-dialog")
    await dialog.get_by_test_id("forget-memory").check()
    await page.get_by_test_id("confirm-ok").click()
    await expect(page.get_by_test_id("thread-item")).to_have_count(0)

    # -- the panel is closed: the notice says it, with Undo; not the error banner ---------------
    await expect(page.get_by_test_id("memory-panel")).to_be_hidden()
    await expect(notice).to_be_visible()
    await expect(page.get_by_test_id("notice-text")).to_have_text(
        "Forgot 1 line with the deleted thread."
    )
    await expect(undo).to_have_text("Undo")
    await expect(page.get_by_test_id("error-banner")).to_be_hidden()
    assert line not in await memory_text(api)
    assert await covered(page, [*TOP_BAR, "notice-action", "notice-close"]) == []
    await screen(page, "1280-forgot-notice")
    await undo.click()
    await expect(page.get_by_test_id("notice-text")).to_have_text("Forgetting undone.")
    await expect(undo).to_be_hidden()
    assert line in await memory_text(api)
    await screen(page, "1280-forgetting-undone")

    # ...and it goes away on its own (not while the pointer rests on it)
    await page.clock.fast_forward(NOTICE_GONE_MS)
    await expect(notice).to_be_visible()
    await page.mouse.move(640, 500)
    await page.clock.fast_forward(NOTICE_GONE_MS)
    await expect(notice).to_be_hidden()

    # -- on a phone; the memory changed before Undo: the notice says where to restore from ------
    await page.set_viewport_size(PHONE)
    await remember(page, "Green tea on Sundays")
    await delete_forgetting(page, "Green tea on Sundays")
    await expect(page.get_by_test_id("notice-text")).to_have_text(
        "Forgot 1 line with the deleted thread."
    )
    assert await covered(page, [*TOP_BAR, "notice-action", "notice-close"]) == []
    await screen(page, "390-forgot-notice")
    await put_memory(api, (await memory_text(api)) + "\nsomething else\n")
    await undo.click()
    await expect(page.get_by_test_id("notice-text")).to_have_text(
        "Not undone: the memory changed since. Restore an older version from Versions."
    )
    await screen(page, "390-not-undone")
    await page.get_by_test_id("notice-close").click()
    await expect(notice).to_be_hidden()

    # -- with the panel open, its own status line says it (no notice) ----------------------------
    await page.set_viewport_size(WIDE)
    await remember(page, "Jasmine in the evening")
    await open_panel(page)
    await delete_forgetting(page, "Jasmine in the evening")
    await expect(page.get_by_test_id("memory-status")).to_have_text(
        "Forgot 1 line with the deleted thread."
    )
    await expect(page.get_by_test_id("memory-status-undo")).to_be_visible()
    await expect(notice).to_be_hidden()
    await api.aclose()
    ui.assert_clean()


async def test_versions_quote_real_thread_titles_only(
    live_server: LiveServer, container: Container, ui: UI
) -> None:
    page = ui.page
    await page.set_viewport_size(WIDE)
    api = await open_app(live_server, container, ui, "jude")
    await remember(page, "Alpha line")
    await page.get_by_test_id("new-thread").click()
    await remember(page, "Beta line")
    threads = (await api.get("/api/v1/threads")).json()["threads"]
    kept = next(t for t in threads if t["thread_id"] != threads[0]["thread_id"])
    # the open (newest) thread goes, without forgetting: its version's thread is then gone
    await page.get_by_test_id("delete-thread").click()
    await page.get_by_test_id("confirm-ok").click()
    await expect(page.get_by_test_id("thread-item")).to_have_count(1)

    await open_panel(page)
    await page.get_by_test_id("memory-tab-versions").click()
    await expect(page.get_by_test_id("memory-versions")).to_have_attribute("data-loaded", "true")
    origins = page.get_by_test_id("memory-version-origin")
    await expect(origins).to_have_text(["in a thread no longer available", f"in “{kept['title']}”"])
    await expect(origins.first).to_have_attribute("data-available", "false")
    await expect(origins.first.locator(".origin-placeholder")).to_have_css("font-style", "italic")
    await expect(origins.nth(1)).to_have_attribute("data-available", "true")
    await screen(page, "1280-versions-origins")
    await page.set_viewport_size(PHONE)
    await expect(origins.first).to_be_visible()
    await screen(page, "390-versions-origins")
    await api.aclose()
    ui.assert_clean()


async def test_a_failed_load_leaves_no_blank_meters_and_the_panel_loads_again(
    live_server: LiveServer, container: Container, ui: UI
) -> None:
    page = ui.page
    api = await open_app(live_server, container, ui, "kira")
    await put_memory(api, "I drink oolong tea\n")
    panel = page.get_by_test_id("memory-panel")
    status = page.get_by_test_id("memory-status")
    meter = page.get_by_test_id("memory-meter")

    async def fail(route: Any) -> None:
        await route.abort()

    # -- opened while the server cannot be reached: no meter with blank labels ------------------
    await page.route(is_memory_load, fail)
    await page.set_viewport_size(PHONE)
    await page.get_by_test_id("memory-panel-button").click()
    await expect(status).to_have_text("Could not load: Cannot reach the server.")
    await expect(panel).to_have_attribute("data-load-failed", "true")
    await expect(meter).to_be_hidden()
    await expect(page.get_by_test_id("memory-entries-empty")).to_be_hidden()
    await screen(page, "390-load-failed")
    await page.get_by_test_id("memory-close").click()
    await page.set_viewport_size(WIDE)
    await page.get_by_test_id("memory-panel-button").click()
    await expect(status).to_have_text("Could not load: Cannot reach the server.")
    await expect(meter).to_be_hidden()
    await screen(page, "1280-load-failed")

    # -- the server answers again: reopening loads it, no Reload needed ---------------------------
    await page.unroute(is_memory_load, fail)
    await page.get_by_test_id("memory-close").click()
    await open_panel(page)
    await expect(status).to_have_text("Loaded · 19 bytes")
    await expect(meter).to_be_visible()
    await expect(page.get_by_test_id("memory-meter-window-text")).to_contain_text("19 bytes of")
    await expect(page.get_by_test_id("memory-meter-file-text")).to_contain_text("file limit")

    # -- it fails while open; a run settling (the server answers) loads it again ----------------
    await page.route(is_memory_load, fail)
    await page.get_by_test_id("memory-reload").click()
    await expect(status).to_have_text("Could not load: Cannot reach the server.")
    # what was loaded before stays, labelled
    await expect(page.get_by_test_id("memory-meter-window-text")).to_contain_text("19 bytes of")
    await page.unroute(is_memory_load, fail)
    await send(page, "hello")
    await wait_idle(page)
    await expect(status).to_have_text("Loaded · 19 bytes")
    await expect(panel).to_have_attribute("data-load-failed", "false")
    await screen(page, "1280-loaded-again")

    # -- Clear names the tab as it is called ------------------------------------------------------
    await page.get_by_test_id("memory-clear").click()
    await expect(page.get_by_test_id("confirm-message")).to_have_text(
        "This empties MEMORY.md: the assistant will no longer know any of it. You can undo this "
        "right after, or restore it later from Versions."
    )
    await page.get_by_test_id("confirm-cancel").click()
    assert await memory_text(api) == "I drink oolong tea\n"
    await api.aclose()
    ui.assert_clean()
