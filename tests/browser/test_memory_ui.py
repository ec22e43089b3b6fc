"""The memory its owner can see and trace (issues 11 and 12), in a real Chromium against a real
``yuxi serve``, PostgreSQL and the offline model: write receipts with Undo (live and replayed),
entry sources that open their thread, the approval card of a memory write after untrusted input,
and the new views at desktop and phone sizes.

Every test ends with ``ui.assert_clean()``: no script error, no console error, no CSP violation,
nothing fetched from anywhere but the app.
"""

from __future__ import annotations

import pytest
from playwright.async_api import expect

from tests.browser.conftest import UI, send, wait_idle
from tests.browser.memory_helpers import entry_texts, memory_text, open_app, open_panel, put_memory
from tests.support.server import LiveServer
from yuxi.bootstrap import Container

pytestmark = pytest.mark.browser


async def test_write_receipt_undo_and_view_in_memory_live_and_replayed(
    live_server: LiveServer, container: Container, ui: UI
) -> None:
    page = ui.page
    api = await open_app(live_server, container, ui, "ada")
    receipts = page.get_by_test_id("memory-receipt")

    # -- remember → a receipt with Undo and View in memory -----------------------------------
    await send(page, "remember: I drink oolong tea")
    await expect(receipts).to_have_count(1)
    first = receipts.nth(0)
    await expect(first).to_have_attribute("data-state", "saved")
    await expect(first.get_by_test_id("memory-receipt-text")).to_have_text(
        "Saved to memory: «I drink oolong tea»"
    )
    await wait_idle(page)
    versions = (await api.get("/api/v1/memory/versions")).json()["versions"]
    await expect(first).to_have_attribute("data-version-id", versions[0]["version_id"])
    await ui.shot("receipt")

    # View in memory opens the panel on that entry
    await first.get_by_test_id("memory-receipt-view").click()
    await expect(page.get_by_test_id("memory-panel")).to_be_visible()
    highlighted = page.locator('[data-testid="memory-entry"][data-highlighted="true"]')
    await expect(highlighted).to_have_count(1)
    await expect(highlighted.get_by_test_id("memory-entry-text")).to_have_text("I drink oolong tea")

    # a second write; the open panel follows it
    await send(page, "remember: Green tea on Sundays")
    await expect(receipts).to_have_count(2)
    await wait_idle(page)
    await expect(entry_texts(page)).to_have_text(["I drink oolong tea", "Green tea on Sundays"])
    await ui.shot("panel-follows-writes")

    # -- Undo of a change the file has moved past is refused (409), nothing is lost -----------
    await first.get_by_test_id("memory-receipt-undo").click()
    await expect(first).to_have_attribute("data-state", "conflict")
    await expect(first.get_by_test_id("memory-receipt-note")).to_contain_text("changed since")
    await expect(first.get_by_test_id("memory-receipt-undo")).to_have_count(0)
    await expect(first.get_by_test_id("memory-receipt-view")).to_be_visible()
    assert await memory_text(api) == "I drink oolong tea\n\nGreen tea on Sundays\n"
    await ui.shot("undo-refused")

    # -- Undo of the last write: the receipt says so, the panel no longer shows it ------------
    second = receipts.nth(1)
    await second.get_by_test_id("memory-receipt-undo").click()
    await expect(second).to_have_attribute("data-state", "undone")
    await expect(second.get_by_test_id("memory-receipt-text")).to_have_text(
        "Undone: «Green tea on Sundays» is no longer in memory."
    )
    await expect(entry_texts(page)).to_have_text(["I drink oolong tea"])
    assert "Green tea" not in await memory_text(api)
    await ui.shot("undone")

    # -- already there; a correction -------------------------------------------------------
    await send(page, "remember: I drink oolong tea")
    await expect(receipts).to_have_count(3)
    await expect(receipts.nth(2)).to_have_attribute("data-state", "unchanged")
    await expect(receipts.nth(2).get_by_test_id("memory-receipt-text")).to_have_text(
        "Already in memory: «I drink oolong tea»"
    )
    await expect(receipts.nth(2).get_by_test_id("memory-receipt-undo")).to_have_count(0)
    await wait_idle(page)
    await send(page, "correct memory: I drink oolong tea => I drink jasmine tea")
    await expect(receipts).to_have_count(4)
    await expect(receipts.nth(3).get_by_test_id("memory-receipt-text")).to_have_text(
        "Corrected: «I drink oolong tea» → «I drink jasmine tea»"
    )
    await wait_idle(page)
    await expect(entry_texts(page)).to_have_text(["I drink jasmine tea"])

    # -- a reload replays the receipts from the thread's stored tool calls ---------------------
    await page.reload()
    await expect(page.get_by_test_id("transcript")).to_have_attribute("data-ready", "true")
    await expect(receipts).to_have_count(4)
    await expect(receipts.nth(1)).to_have_attribute("data-state", "undone")  # from the history
    await expect(receipts.nth(2)).to_have_attribute("data-state", "unchanged")
    await expect(receipts.nth(3)).to_have_attribute("data-state", "saved")
    await receipts.nth(3).get_by_test_id("memory-receipt-view").click()
    await expect(highlighted.get_by_test_id("memory-entry-text")).to_have_text(
        "I drink jasmine tea"
    )
    # the correction undone from its replayed receipt
    await receipts.nth(3).get_by_test_id("memory-receipt-undo").click()
    await expect(receipts.nth(3)).to_have_attribute("data-state", "undone")
    await expect(receipts.nth(3).get_by_test_id("memory-receipt-text")).to_have_text(
        "Correction undone: memory says «I drink oolong tea» again."
    )
    await expect(entry_texts(page)).to_have_text(["I drink oolong tea"])
    assert await memory_text(api) == "I drink oolong tea\n"
    await ui.shot("replayed")
    await api.aclose()
    ui.assert_clean()


async def test_entry_source_link_opens_the_source_thread_and_edits_say_by_you(
    live_server: LiveServer, container: Container, ui: UI
) -> None:
    page = ui.page
    api = await open_app(live_server, container, ui, "ben")
    await send(page, "remember: I keep bees")
    await expect(page.get_by_test_id("memory-receipt")).to_have_count(1)
    await wait_idle(page)
    source_id = await page.locator(
        '[data-testid="thread-item"][aria-current="true"]'
    ).get_attribute("data-thread-id")
    await page.get_by_test_id("new-thread").click()  # a draft: created by its first message
    await send(page, "hello")
    await expect(page.get_by_test_id("thread-item")).to_have_count(2)
    await wait_idle(page)

    # -- the entry names its source; the link opens that thread at that message -------------
    await open_panel(page)
    entry = page.get_by_test_id("memory-entry")
    await expect(entry).to_have_count(1)
    link = entry.get_by_test_id("memory-entry-source-link")
    await expect(link).to_have_text("remember: I keep bees")
    await expect(entry.get_by_test_id("memory-entry-source")).to_contain_text("from ")
    await ui.shot("entry-with-source")
    await link.click()
    current = page.locator('[data-testid="thread-item"][aria-current="true"]')
    await expect(current).to_have_attribute("data-thread-id", source_id or "")
    marked = page.locator('[data-testid="message"][data-highlighted="true"]')
    await expect(marked).to_have_count(1)
    await expect(marked).to_have_attribute("data-role", "user")
    await expect(marked.get_by_test_id("message-text")).to_have_text("remember: I keep bees")
    await ui.shot("source-thread-opened")

    # -- the source thread deleted: the version stays, the link says the source is gone ------
    assert (await api.delete(f"/api/v1/threads/{source_id}")).status_code == 204
    await page.get_by_test_id("memory-reload").click()
    await expect(page.get_by_test_id("memory-status")).to_contain_text("Reloaded")
    await expect(entry.get_by_test_id("memory-entry-source-gone")).to_have_text(
        "source no longer available"
    )
    await expect(entry.get_by_test_id("memory-entry-source-link")).to_have_count(0)
    await ui.shot("source-gone")

    # -- an inline edit of the entry saves the file; its source becomes the user ------------
    await entry.get_by_test_id("memory-entry-edit").click()
    editor = entry.get_by_test_id("memory-entry-editor")
    await expect(editor).to_have_value("I keep bees")
    await editor.fill("I keep two hives of bees")
    await entry.get_by_test_id("memory-entry-save").click()
    await expect(entry_texts(page)).to_have_text(["I keep two hives of bees"])
    await expect(entry.get_by_test_id("memory-entry-source")).to_contain_text("edited by you")
    assert await memory_text(api) == "I keep two hives of bees\n"
    await expect(page.get_by_test_id("memory-status")).to_contain_text("Entry saved")
    # and deleted, undoably
    await entry.get_by_test_id("memory-entry-delete").click()
    await expect(entry_texts(page)).to_have_count(0)
    assert await memory_text(api) == ""
    await page.get_by_test_id("memory-status-undo").click()
    await expect(entry_texts(page)).to_have_text(["I keep two hives of bees"])
    await api.aclose()
    ui.assert_clean()


async def test_tainted_remember_waits_for_approval_then_shows_a_receipt(
    live_server: LiveServer, container: Container, ui: UI
) -> None:
    page = ui.page
    api = await open_app(live_server, container, ui, "gus")
    await send(page, "my old note: I like jasmine tea")
    await wait_idle(page)
    old_thread = await page.locator(
        '[data-testid="thread-item"][aria-current="true"]'
    ).get_attribute("data-thread-id")
    await page.get_by_test_id("new-thread").click()  # a draft: created by its first message

    # one message: read another thread, then remember → the write waits for the user
    await send(page, f"read thread: {old_thread}\nremember: I like jasmine tea")
    await expect(page.get_by_test_id("thread-item")).to_have_count(2)
    card = page.locator('[data-testid="approval-card"][data-state="pending"]')
    await expect(card).to_be_visible()
    action = card.get_by_test_id("approval-action")
    await expect(action).to_have_attribute("data-kind", "memory")
    await expect(action.get_by_test_id("approval-tool")).to_have_text("remember_memory")
    await expect(action.get_by_test_id("approval-memory-content")).to_have_text(
        "I like jasmine tea"
    )
    await expect(action.get_by_test_id("approval-memory-replaces")).to_have_count(0)
    await expect(action.get_by_test_id("approval-reason")).to_contain_text(
        "read other conversations or files before asking to remember"
    )
    await expect(page.get_by_test_id("memory-receipt")).to_have_count(0)
    await expect(page.get_by_test_id("send")).to_be_disabled()
    assert await memory_text(api) == ""  # nothing written before the approval
    await ui.shot("memory-approval-card")

    await card.get_by_test_id("approve").click()
    receipt = page.get_by_test_id("memory-receipt")
    await expect(receipt).to_have_count(1)
    await expect(receipt.get_by_test_id("memory-receipt-text")).to_have_text(
        "Saved to memory: «I like jasmine tea»"
    )
    await expect(page.locator('[data-testid="approval-card"]')).to_have_attribute(
        "data-state", "approved"
    )
    await wait_idle(page)
    assert await memory_text(api) == "I like jasmine tea\n"
    await ui.shot("approved-receipt")

    # replayed after a reload, from the stored tool call the resumed run finished
    await page.reload()
    await expect(page.get_by_test_id("transcript")).to_have_attribute("data-ready", "true")
    await expect(receipt).to_have_count(1)
    await expect(receipt).to_have_attribute("data-state", "saved")

    # a correction asked for after reading: the card shows both texts; Reject writes nothing
    await send(
        page, f"read thread: {old_thread}\ncorrect memory: I like jasmine tea => I like green tea"
    )
    card = page.locator('[data-testid="approval-card"][data-state="pending"]')
    await expect(card.get_by_test_id("approval-memory-content")).to_have_text("I like green tea")
    await expect(card.get_by_test_id("approval-memory-replaces")).to_have_text("I like jasmine tea")
    await card.get_by_test_id("reject").click()
    await expect(
        page.locator('[data-testid="approval-card"][data-state="rejected"]')
    ).to_have_count(1)
    await wait_idle(page)
    await expect(receipt).to_have_count(1)
    assert await memory_text(api) == "I like jasmine tea\n"
    await api.aclose()
    ui.assert_clean()


async def test_receipt_entries_and_history_fit_a_desktop_and_a_phone(
    live_server: LiveServer, container: Container, ui: UI
) -> None:
    """The three new views at 1280x800 and 390x844: nothing wider than the screen, the panel's
    controls reachable. Their screenshots are the ones the issue's closing note describes."""
    page = ui.page
    api = await open_app(live_server, container, ui, "hana")
    await put_memory(api, "I live in Lisbon\n\n- I work as a translator\n- 我会说中文\n")
    await send(page, "remember: I drink oolong tea, no sugar")
    await expect(page.get_by_test_id("memory-receipt")).to_have_count(1)
    await wait_idle(page)
    await send(page, "correct memory: I live in Lisbon => I live in Porto")
    await expect(page.get_by_test_id("memory-receipt")).to_have_count(2)
    await wait_idle(page)

    for width, height in ((1280, 800), (390, 844)):
        size = f"{width}x{height}"
        await page.set_viewport_size({"width": width, "height": height})
        await page.get_by_test_id("memory-receipt").last.scroll_into_view_if_needed()
        await ui.shot(f"receipt-{size}")
        assert await page.evaluate(
            "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
        )

        await open_panel(page)
        await expect(entry_texts(page)).to_have_count(4)
        await expect(page.get_by_test_id("memory-close")).to_be_in_viewport()
        await ui.shot(f"entries-{size}")

        await page.get_by_test_id("memory-tab-versions").click()
        await expect(page.get_by_test_id("memory-versions")).to_have_attribute(
            "data-loaded", "true"
        )
        newest = page.get_by_test_id("memory-version").first
        await newest.get_by_test_id("memory-version-show").click()
        await expect(newest.get_by_test_id("memory-version-diff")).to_be_visible()
        await expect(page.get_by_test_id("memory-close")).to_be_in_viewport()
        await ui.shot(f"history-{size}")
        assert await page.evaluate(
            "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
        )
        await page.get_by_test_id("memory-tab-entries").click()
        await page.get_by_test_id("memory-close").click()
        await expect(page.get_by_test_id("memory-panel")).to_be_hidden()
    await api.aclose()
    ui.assert_clean()
