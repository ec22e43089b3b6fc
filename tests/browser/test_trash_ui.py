"""The trash in the web UI (issue 36 §1), in a real Chromium against a real ``yuxi serve``,
PostgreSQL and the offline model, at 1280x800 and 390x844: the delete dialog says the thread goes
to the trash for the server's days; the thread list's Trash view lists it (and says when its
memory lines were forgotten); Restore brings it back open with its messages, and says the
forgotten lines stay forgotten; the notice's Undo restores too; Delete now asks, then removes it
for good (nothing of it left in the database), and the memory version it recorded reads "in a
deleted thread". Ends with ``ui.assert_clean()``."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.async_api import expect

from tests.browser.conftest import UI, send, wait_idle
from tests.browser.memory_helpers import memory_text, open_app, open_panel
from tests.browser.screens import review_shot
from tests.support.db_scan import scan_database
from tests.support.server import LiveServer
from yuxi.bootstrap import Container

pytestmark = pytest.mark.browser

VIEWPORTS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
LINE = "I drink oolong tea 乌龙 qzxtrashui"


async def _sidebar(page: Any, viewport: str) -> None:
    """On a phone the thread list is a drawer: open it first."""
    if viewport == "phone" and not await page.get_by_test_id("sidebar").is_visible():
        await page.get_by_test_id("threads-toggle").click()
        await expect(page.get_by_test_id("sidebar")).to_be_visible()


async def _open_trash(page: Any, viewport: str) -> Any:
    await _sidebar(page, viewport)
    await page.get_by_test_id("trash-toggle").click()
    view = page.get_by_test_id("trash-view")
    await expect(view).to_be_visible()
    await expect(page.get_by_test_id("thread-list")).to_be_hidden()
    return view


async def _fits(page: Any, viewport: str) -> None:
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= VIEWPORTS[viewport]["width"], width


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
async def test_delete_to_the_trash_restore_and_delete_now(
    live_server: LiveServer, container: Container, ui: UI, viewport: str
) -> None:
    page = ui.page
    await page.set_viewport_size(VIEWPORTS[viewport])
    api = await open_app(live_server, container, ui, "wren")
    dialog = page.get_by_test_id("confirm-dialog")
    notice = page.get_by_test_id("notice")

    # -- a thread that wrote memory, deleted with its lines ------------------------------------
    await send(page, f"remember: {LINE}")
    receipt = page.get_by_test_id("memory-receipt")
    await expect(receipt.filter(has_text=LINE)).to_have_attribute("data-state", "saved")
    await wait_idle(page)
    kept = (await api.get("/api/v1/threads")).json()["threads"][0]
    await page.get_by_test_id("delete-thread").click()
    await expect(dialog).to_be_visible()
    await expect(dialog).to_contain_text("It goes to the trash")
    await expect(dialog).to_contain_text("restore it for 30 days")
    await expect(dialog.get_by_test_id("forget-line")).to_have_text([LINE])
    await review_shot(page, f"trash-{viewport}-delete-dialog")
    await dialog.get_by_test_id("forget-memory").check()
    await page.get_by_test_id("confirm-ok").click()
    await expect(notice).to_contain_text("Forgot 1 line with the deleted thread.")  # its Undo
    assert LINE not in await memory_text(api)

    # -- the Trash view lists it, with its forgotten lines -------------------------------------
    view = await _open_trash(page, viewport)
    await expect(view.get_by_test_id("trash-note")).to_contain_text("stay here 30 days")
    item = view.get_by_test_id("trash-item")
    await expect(item).to_have_count(1)
    await expect(item.get_by_test_id("trash-title")).to_have_text(kept["title"])
    await expect(item.get_by_test_id("trash-forgotten")).to_be_visible()
    await expect(item.get_by_test_id("trash-until")).to_contain_text("Removed for good after")
    await _fits(page, viewport)
    await review_shot(page, f"trash-{viewport}-list")
    await ui.shot("trash-list")

    # -- Restore: open again with its messages; the lines stay forgotten -----------------------
    await item.get_by_test_id("trash-restore").click()
    await expect(page.get_by_test_id("thread-title")).to_have_text(kept["title"])
    await expect(page.get_by_test_id("transcript")).to_contain_text(LINE)
    await expect(notice).to_contain_text("stay forgotten")
    assert LINE not in await memory_text(api)
    await _sidebar(page, viewport)
    await expect(page.get_by_test_id("trash-view")).to_be_hidden()
    await expect(page.get_by_test_id("thread-item")).to_have_count(1)
    await review_shot(page, f"trash-{viewport}-restored")
    if viewport == "phone":
        await page.get_by_test_id("drawer-close").click()

    # -- a plain delete, undone from the notice --------------------------------------------------
    await page.get_by_test_id("delete-thread").click()
    await page.get_by_test_id("confirm-ok").click()
    await expect(notice).to_contain_text("is in the trash.")
    await page.get_by_test_id("notice-action").click()
    await expect(page.get_by_test_id("thread-title")).to_have_text(kept["title"])
    await expect(notice).to_contain_text("Restored")

    # -- Delete now: asked first, then gone for good ---------------------------------------------
    await page.get_by_test_id("delete-thread").click()
    await page.get_by_test_id("confirm-ok").click()
    await expect(notice).to_contain_text("is in the trash.")
    view = await _open_trash(page, viewport)
    await view.get_by_test_id("trash-delete-now").click()
    await expect(dialog).to_contain_text("cannot be undone")
    await review_shot(page, f"trash-{viewport}-delete-now")
    await page.get_by_test_id("confirm-cancel").click()
    await expect(view.get_by_test_id("trash-item")).to_have_count(1)
    await view.get_by_test_id("trash-delete-now").click()
    await page.get_by_test_id("confirm-ok").click()
    await expect(view.get_by_test_id("trash-item")).to_have_count(0)
    await expect(view.get_by_test_id("trash-empty")).to_be_visible()
    await expect(notice).to_contain_text("deleted for good")
    assert (await api.get(f"/api/v1/threads/{kept['thread_id']}")).status_code == 404
    assert not scan_database(container.database_url, [kept["thread_id"]]).hits
    await page.get_by_test_id("trash-back").click()
    await expect(page.get_by_test_id("thread-empty")).to_be_visible()  # the (empty) list again
    await expect(page.get_by_test_id("trash-view")).to_be_hidden()
    if viewport == "phone":
        await page.get_by_test_id("drawer-close").click()

    # -- the memory history keeps the versions it recorded, without the link ------------------
    await open_panel(page)
    await page.get_by_test_id("memory-tab-versions").click()
    await expect(page.get_by_test_id("memory-versions")).to_have_attribute("data-loaded", "true")
    await expect(page.get_by_test_id("memory-version-origin")).to_have_text(["in a deleted thread"])
    await review_shot(page, f"trash-{viewport}-versions")
    await api.aclose()
    ui.assert_clean()
