"""Safe editing of the memory (issue 11) in a real Chromium against a real ``yuxi serve``:
Clear asks in the page and is undoable, unsaved edits are never dropped silently, a 412 keeps the
typed text beside the current file, the history shows diffs and restores, the meter marks what
the assistant does not see and lint findings show on their entries.

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
    await page.get_by_test_id("memory-tab-versions").click()
    await expect(page.get_by_test_id("memory-versions")).to_have_attribute("data-loaded", "true")
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
    await page.get_by_test_id("memory-tab-versions").click()
    await expect(page.get_by_test_id("memory-versions")).to_have_attribute("data-loaded", "true")
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
    # findings the lint may make (a duplicate, a secret), then 30 entries of about 1 KiB: the
    # last ones lie beyond the 24 KiB the prompt shows
    planted = [
        "I drink oolong tea",
        "I drink  Oolong tea",
        "my api key is sk-PLANTED0123456789abcdef",
    ]
    blocks = [f"fact {i:02d} " + "茶" * 330 for i in range(30)]
    await put_memory(api, "\n\n".join(planted + blocks) + "\n")
    view = (await api.get("/api/v1/memory")).json()
    outside = [e["index"] for e in view["entries"] if not e["in_prompt_window"]]
    assert len(view["entries"]) == 33 and outside and outside[-1] == 32

    await open_panel(page)
    await expect(page.get_by_test_id("memory-entry")).to_have_count(33)
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
