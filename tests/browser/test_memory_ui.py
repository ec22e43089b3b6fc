"""The memory its owner can see, trace and undo (issue 11), in a real Chromium against a real
``yuxi serve``, PostgreSQL and the offline model: write receipts with Undo, the panel as entries
with their sources, lint and the prompt-window meter, safe editing (confirmed and undoable Clear,
unsaved edits never dropped silently, a 412 that keeps the typed text) and the history view.

Every test ends with ``ui.assert_clean()``: no script error, no console error, no CSP violation,
nothing fetched from anywhere but the app.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from playwright.async_api import expect

from tests.browser.conftest import UI, send, wait_idle
from tests.fixtures_server import LiveServer, create_user_with_token
from yuxi.bootstrap import Container

pytestmark = pytest.mark.browser

MEMORY = "/api/v1/workspace/files/agents/MEMORY.md"


async def open_app(
    live_server: LiveServer, container: Container, ui: UI, name: str
) -> httpx.AsyncClient:
    _, token = await create_user_with_token(container, name)
    api = live_server.client(token)
    assert (await api.put("/api/v1/me/config", json={"enable_memory": True})).status_code == 200
    await ui.page.goto(f"{live_server.base_url}/?token={token}")
    await expect(ui.page.get_by_test_id("user-name")).to_have_text(name)
    return api


async def put_memory(api: httpx.AsyncClient, text: str) -> None:
    current = await api.get(MEMORY)
    headers = {"If-Match": current.headers["etag"]} if current.status_code == 200 else {}
    assert (await api.put(MEMORY, content=text.encode(), headers=headers)).status_code == 204


async def memory_text(api: httpx.AsyncClient) -> str:
    got = await api.get(MEMORY)
    return got.text if got.status_code == 200 else ""


def entry_texts(page: Any) -> Any:
    return page.locator('[data-testid="memory-entry"]:visible [data-testid="memory-entry-text"]')


async def open_panel(page: Any) -> None:
    await page.get_by_test_id("memory-panel-button").click()
    await expect(page.get_by_test_id("memory-panel")).to_have_attribute("data-loaded", "true")


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
    await expect(highlighted.get_by_test_id("memory-entry-text")).to_have_text(
        "I drink oolong tea"
    )

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
    source_id = await page.locator('[data-testid="thread-item"][aria-current="true"]').get_attribute(
        "data-thread-id"
    )
    await page.get_by_test_id("new-thread").click()
    await expect(page.get_by_test_id("thread-item")).to_have_count(2)
    await send(page, "hello")
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


async def test_clear_asks_first_and_is_undoable(
    live_server: LiveServer, container: Container, ui: UI
) -> None:
    page = ui.page
    api = await open_app(live_server, container, ui, "cleo")
    original = "I drink oolong tea\n\n- Green tea on Sundays\n- 周末喝绿茶\n"
    await put_memory(api, original)
    await open_panel(page)
    await expect(entry_texts(page)).to_have_text(
        ["I drink oolong tea", "- Green tea on Sundays", "- 周末喝绿茶"]
    )

    # the filter narrows the list
    await page.get_by_test_id("memory-filter").fill("TEA")
    await expect(entry_texts(page)).to_have_text(["I drink oolong tea", "- Green tea on Sundays"])
    await expect(page.get_by_test_id("memory-filter-count")).to_have_text("2 of 3")
    await page.get_by_test_id("memory-filter").fill("")
    await expect(entry_texts(page)).to_have_count(3)

    # -- Clear asks in the page; Cancel keeps everything --------------------------------------
    dialog = page.get_by_test_id("confirm-dialog")
    await page.get_by_test_id("memory-clear").click()
    await expect(dialog).to_be_visible()
    await expect(page.get_by_test_id("confirm-title")).to_have_text("Clear your memory?")
    await ui.shot("clear-confirm")
    await page.get_by_test_id("confirm-cancel").click()
    await expect(dialog).to_be_hidden()
    await expect(entry_texts(page)).to_have_count(3)
    assert await memory_text(api) == original
    # Escape is a "no" as well
    await page.get_by_test_id("memory-clear").click()
    await expect(dialog).to_be_visible()
    await page.keyboard.press("Escape")
    await expect(dialog).to_be_hidden()
    await expect(page.get_by_test_id("memory-panel")).to_be_visible()
    assert await memory_text(api) == original

    # -- confirmed: the file is empty, and an Undo is offered --------------------------------
    await page.get_by_test_id("memory-clear").click()
    await page.get_by_test_id("confirm-ok").click()
    await expect(page.get_by_test_id("memory-status")).to_contain_text("Cleared")
    await expect(entry_texts(page)).to_have_count(0)
    await expect(page.get_by_test_id("memory-entries-empty")).to_be_visible()
    assert await memory_text(api) == ""
    undo = page.get_by_test_id("memory-status-undo")
    await expect(undo).to_be_visible()
    await ui.shot("cleared")
    await undo.click()
    await expect(page.get_by_test_id("memory-status")).to_contain_text("Clear undone")
    await expect(entry_texts(page)).to_have_text(
        ["I drink oolong tea", "- Green tea on Sundays", "- 周末喝绿茶"]
    )
    assert await memory_text(api) == original
    await expect(undo).to_be_hidden()

    # the history tells the story: cleared by you, then undone
    await page.get_by_test_id("memory-tab-history").click()
    kinds = page.locator('[data-testid="memory-version"]')
    await expect(kinds.first).to_have_attribute("data-kind", "undo")
    await expect(kinds.nth(1)).to_have_attribute("data-actor", "user")
    await ui.shot("history-after-undo")
    await api.aclose()
    ui.assert_clean()


async def test_unsaved_edits_are_kept_until_the_user_lets_them_go(
    live_server: LiveServer, container: Container, ui: UI
) -> None:
    page = ui.page
    api = await open_app(live_server, container, ui, "dora")
    await put_memory(api, "I drink oolong tea\n")
    await open_panel(page)
    await page.get_by_test_id("memory-tab-raw").click()
    text = page.get_by_test_id("memory-text")
    await expect(text).to_have_value("I drink oolong tea\n")
    dirty = page.get_by_test_id("memory-dirty")
    await expect(dirty).to_be_hidden()

    # -- a dirty draft: closing asks first; "Keep editing" keeps it ---------------------------
    typed = "I drink oolong tea\nI take it without sugar 不加糖\n"
    await text.fill(typed)
    await expect(dirty).to_be_visible()
    await page.get_by_test_id("memory-close").click()
    await expect(page.get_by_test_id("confirm-dialog")).to_be_visible()
    await ui.shot("close-asks")
    await page.get_by_test_id("confirm-cancel").click()
    await expect(page.get_by_test_id("memory-panel")).to_be_visible()
    await expect(text).to_have_value(typed)
    # Escape on the panel asks the same question
    await text.press("Escape")
    await expect(page.get_by_test_id("confirm-dialog")).to_be_visible()
    await page.get_by_test_id("confirm-cancel").click()
    await expect(text).to_have_value(typed)

    # -- the file changed meanwhile: Save is refused, the typed text stays beside it -----------
    theirs = "I drink oolong tea\n\nGreen tea on Sundays\n"
    await put_memory(api, theirs)
    await page.get_by_test_id("memory-save").click()
    conflict = page.get_by_test_id("memory-conflict")
    await expect(conflict).to_be_visible()
    await expect(page.get_by_test_id("memory-conflict-mine")).to_have_value(typed)
    await expect(page.get_by_test_id("memory-conflict-theirs")).to_have_value(theirs)
    await expect(text).to_have_value(typed)
    await expect(dirty).to_be_visible()
    assert await memory_text(api) == theirs
    await ui.shot("conflict-keeps-typed-text")

    # Keep mine writes it deliberately; that write is undoable
    await page.get_by_test_id("memory-conflict-keep-mine").click()
    await expect(conflict).to_be_hidden()
    await expect(page.get_by_test_id("memory-status")).to_contain_text("Saved your version")
    await expect(dirty).to_be_hidden()
    assert await memory_text(api) == typed
    await page.get_by_test_id("memory-status-undo").click()
    await expect(text).to_have_value(theirs)
    assert await memory_text(api) == theirs

    # -- an entry edit refused the same way keeps its text too ---------------------------------
    await page.get_by_test_id("memory-tab-entries").click()
    entry = page.get_by_test_id("memory-entry").nth(1)
    await entry.get_by_test_id("memory-entry-edit").click()
    await entry.get_by_test_id("memory-entry-editor").fill("Jasmine tea on Sundays")
    await put_memory(api, theirs + "\nHoney on Fridays\n")
    await entry.get_by_test_id("memory-entry-save").click()
    await expect(conflict).to_be_visible()
    await expect(page.get_by_test_id("memory-conflict-mine")).to_have_value(
        "I drink oolong tea\n\nJasmine tea on Sundays\n"
    )
    await expect(entry.get_by_test_id("memory-entry-editor")).to_have_value(
        "Jasmine tea on Sundays"
    )
    await page.get_by_test_id("memory-conflict-take-theirs").click()
    await expect(conflict).to_be_hidden()
    await expect(entry_texts(page)).to_have_text(
        ["I drink oolong tea", "Green tea on Sundays", "Honey on Fridays"]
    )

    # -- nothing unsaved: the panel closes at once -------------------------------------------
    await page.get_by_test_id("memory-close").click()
    await expect(page.get_by_test_id("memory-panel")).to_be_hidden()
    await expect(page.get_by_test_id("confirm-dialog")).to_be_hidden()
    await api.aclose()
    ui.assert_clean()


async def test_history_shows_who_changed_what_with_diffs_and_restores(
    live_server: LiveServer, container: Container, ui: UI
) -> None:
    page = ui.page
    api = await open_app(live_server, container, ui, "eve")
    await put_memory(api, "one\n")
    await put_memory(api, "one\n\ntwo\n")
    await send(page, "remember: three")
    await expect(page.get_by_test_id("memory-receipt")).to_have_count(1)
    await wait_idle(page)

    await open_panel(page)
    await page.get_by_test_id("memory-tab-history").click()
    versions = page.get_by_test_id("memory-version")
    await expect(versions).to_have_count(3)
    newest = versions.nth(0)
    await expect(newest).to_have_attribute("data-actor", "agent")
    await expect(newest).to_have_attribute("data-kind", "add")
    await expect(newest.get_by_test_id("memory-version-what")).to_have_text("Assistant added")
    await expect(newest.get_by_test_id("memory-version-current")).to_be_visible()
    await expect(newest.get_by_test_id("memory-version-restore")).to_have_count(0)
    await expect(versions.nth(1).get_by_test_id("memory-version-what")).to_have_text("You edited")

    # the diff of a version against its parent, as text lines classed + / -
    await newest.get_by_test_id("memory-version-show").click()
    diff = newest.get_by_test_id("memory-version-diff")
    await expect(diff.locator('[data-diff="add"]')).to_have_text(["+", "+three"])
    await expect(diff.locator('[data-diff="del"]')).to_have_count(0)
    await versions.nth(1).get_by_test_id("memory-version-show").click()
    await expect(
        versions.nth(1).get_by_test_id("memory-version-diff").locator('[data-diff="add"]')
    ).to_contain_text(["+two"])
    await ui.shot("history")

    # -- restore the oldest (If-Match the current version) ------------------------------------
    await versions.nth(2).get_by_test_id("memory-version-restore").click()
    await page.get_by_test_id("confirm-ok").click()
    await expect(page.get_by_test_id("memory-status")).to_contain_text("Restored")
    await expect(versions).to_have_count(4)
    await expect(versions.nth(0)).to_have_attribute("data-kind", "restore")
    assert await memory_text(api) == "one\n"

    # -- a restore over a file changed since it was shown is refused -------------------------
    await put_memory(api, "one\n\nchanged elsewhere\n")
    await versions.nth(2).get_by_test_id("memory-version-restore").click()
    await page.get_by_test_id("confirm-ok").click()
    await expect(page.get_by_test_id("memory-status")).to_contain_text("Not restored")
    assert await memory_text(api) == "one\n\nchanged elsewhere\n"
    await expect(versions).to_have_count(5)  # reloaded: the outside edit is listed
    await api.aclose()
    ui.assert_clean()


async def test_meter_marks_what_the_assistant_does_not_see_and_shows_lint(
    live_server: LiveServer, container: Container, ui: UI
) -> None:
    page = ui.page
    api = await open_app(live_server, container, ui, "finn")
    # 30 entries of about 1 KiB: the last ones lie beyond the 24 KiB the prompt shows
    blocks = [f"fact {i:02d} " + "茶" * 330 for i in range(30)]
    await put_memory(api, "\n\n".join(blocks) + "\n")
    view = (await api.get("/api/v1/memory")).json()
    outside = [e["index"] for e in view["entries"] if not e["in_prompt_window"]]
    assert outside and outside[-1] == 29

    await open_panel(page)
    await expect(page.get_by_test_id("memory-entry")).to_have_count(30)
    await expect(page.get_by_test_id("memory-meter-window-text")).to_contain_text(
        "the assistant sees only the first 24 KiB"
    )
    await expect(page.get_by_test_id("memory-meter-file-text")).to_contain_text("128 KiB")
    marked = page.locator('[data-testid="memory-entry"][data-in-window="false"]')
    await expect(marked).to_have_count(len(outside))
    await expect(marked.last.get_by_test_id("memory-entry-outside")).to_be_visible()
    # every finding shows on its entry: outside the window as the entry's mark, others as chips
    for finding in view["lint"]:
        on_entry = f'[data-testid="memory-entry"][data-index="{finding["entry_index"]}"] '
        if finding["code"] == "outside_prompt_window":
            mark = page.locator(on_entry + '[data-testid="memory-entry-outside"]')
            await expect(mark).to_have_attribute("data-code", "outside_prompt_window")
            await expect(mark).to_have_text(finding["message"])
        else:
            chip = f'[data-testid="memory-lint"][data-code="{finding["code"]}"]'
            await expect(page.locator(on_entry + chip)).to_have_count(1)
    assert any(f["code"] == "outside_prompt_window" for f in view["lint"])
    assert "null" not in (await page.get_by_test_id("memory-entries").inner_text())
    await marked.last.scroll_into_view_if_needed()
    await ui.shot("outside-window")
    await api.aclose()
    ui.assert_clean()
