"""Words for people, and what stays after a reload (issue 36 §3, §4), in a real Chromium against
a real ``yuxi serve``, PostgreSQL and the offline model, on a desktop (1280x800) and a phone
(390x844):

* a rejected memory write tells the user "You rejected this, so nothing was saved to your
  memory." — the text addressed to the model ("Do not save it again…") stays in the tool card's
  Result, never in the line a person reads — and the decision is still there after a reload;
* Import says what it does: "replaces your 2 entries with its 4 entries", or with Add "Adds 3
  new entries … after your 2 entries (1 already in your memory, left out)", and Apply does
  exactly that; its Undo is still offered after the panel was closed and opened again, and
  Versions offers Undo on the current version.

Each test ends with ``ui.assert_clean()``: no script error, no console error, no CSP violation.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.async_api import expect

from tests.browser.conftest import UI, send, wait_idle
from tests.browser.memory_helpers import memory_text, open_app, open_panel, put_memory
from tests.browser.screens import review_shot
from tests.support.server import LiveServer
from yuxi.bootstrap import Container

pytestmark = pytest.mark.browser

VIEWPORTS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
KEY = "sk-proj-4fGh2KLmN8pQrS7tUvWx9yZaWORDS01"
MODEL_TEXT = "Do not save it again"


@pytest.fixture(params=list(VIEWPORTS))
def viewport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def shot(page: Any, viewport: str, name: str) -> None:
    await review_shot(page, f"words-{VIEWPORTS[viewport]['width']}-{name}")


async def test_a_rejected_memory_write_is_told_in_words_for_people_and_survives_reload(
    live_server: LiveServer, container: Container, ui: UI, viewport: str
) -> None:
    page = ui.page
    await page.set_viewport_size(VIEWPORTS[viewport])
    api = await open_app(live_server, container, ui, f"words-{viewport}")
    await send(page, f"remember: 我的 API key 是 {KEY}")
    card = page.locator('[data-testid="approval-card"][data-state="pending"]')
    await card.get_by_test_id("reject").click()
    await wait_idle(page)

    tool = page.locator('[data-testid="tool-event"][data-tool-name="remember_memory"]')
    human = "You rejected this, so nothing was saved to your memory."
    decided = page.get_by_test_id("approval-card")
    for moment in ("live", "reloaded"):
        await expect(tool).to_have_attribute("data-rejected", "true")
        await expect(tool.get_by_test_id("tool-status")).to_have_text("rejected")
        await expect(tool.get_by_test_id("tool-error")).to_have_text(human)
        # the model's words stay in the card's Result, for whoever opens it
        await expect(tool.get_by_test_id("tool-result-text")).to_contain_text(MODEL_TEXT)
        await expect(tool.get_by_test_id("tool-result-text")).not_to_be_visible()
        await expect(decided).to_have_count(1)
        await expect(decided).to_have_attribute("data-state", "rejected")
        await expect(decided.get_by_test_id("approval-status")).to_have_text(
            "Rejected — nothing was saved to your memory."
        )
        # nothing a person reads without opening Result speaks to the model
        visible = await page.get_by_test_id("transcript").inner_text()
        assert MODEL_TEXT not in visible, visible
        await shot(page, viewport, f"rejected-memory-{moment}")
        if moment == "live":
            await page.reload()
            await expect(page.get_by_test_id("transcript")).to_have_attribute("data-ready", "true")
    assert await memory_text(api) == ""
    await api.aclose()
    ui.assert_clean()


async def pick(page: Any, name: str, data: bytes) -> None:
    async with page.expect_file_chooser() as chooser:
        await page.get_by_test_id("memory-import").click()
    files = [{"name": name, "mimeType": "text/markdown", "buffer": data}]
    await (await chooser.value).set_files(files=files)


async def reopen_panel(page: Any) -> None:
    await page.get_by_test_id("memory-close").click()
    await expect(page.get_by_test_id("memory-panel")).to_be_hidden()
    await open_panel(page)


async def test_import_says_replace_or_add_and_its_undo_outlives_the_panel(
    live_server: LiveServer, container: Container, ui: UI, viewport: str
) -> None:
    page = ui.page
    await page.set_viewport_size(VIEWPORTS[viewport])
    api = await open_app(live_server, container, ui, f"importer-{viewport}")
    original = "- 一 喝乌龙茶\n- 二 住在杭州\n"
    await put_memory(api, original)
    await open_panel(page)
    summary = page.get_by_test_id("memory-import-summary")
    apply = page.get_by_test_id("memory-import-apply")
    status = page.get_by_test_id("memory-status")
    imported = "- 二 住在杭州\n- 三 养了一只猫\n- 四 会说法语\n- 五 早上跑步\n"

    # -- the preview says what Replace would do, then what Add would do ------------------------
    await pick(page, "notes.md", imported.encode())
    await expect(page.get_by_test_id("memory-import-preview")).to_have_attribute(
        "data-mode", "replace"
    )
    await expect(summary).to_contain_text("“notes.md” replaces your 2 entries with its 4 entries")
    await expect(apply).to_have_text("Replace my memory")
    await shot(page, viewport, "import-replace-preview")
    await page.get_by_test_id("memory-import-mode-append").check()
    await expect(page.get_by_test_id("memory-import-preview")).to_have_attribute(
        "data-mode", "append"
    )
    await expect(summary).to_contain_text(
        "Adds 3 new entries from “notes.md” after your 2 entries"
        " (1 already in your memory, left out)"
    )
    await expect(apply).to_have_text("Add 3 entries")
    await shot(page, viewport, "import-append-preview")
    assert await memory_text(api) == original  # a preview writes nothing

    await apply.click()
    await expect(status).to_contain_text("Added 3 entries from “notes.md”")
    appended = original + "- 三 养了一只猫\n- 四 会说法语\n- 五 早上跑步\n"
    assert await memory_text(api) == appended

    # -- closed and opened again: the receipt and its Undo are still there ---------------------
    await reopen_panel(page)
    await expect(status).to_contain_text("Added 3 entries from “notes.md”")
    await expect(page.get_by_test_id("memory-status-undo")).to_be_visible()
    await shot(page, viewport, "import-receipt-after-reopen")
    await page.get_by_test_id("memory-status-undo").click()
    await expect(status).to_have_text("Import undone.")
    assert await memory_text(api) == original

    # -- a replace, undone from Versions after the panel was closed and opened -----------------
    await pick(page, "notes.md", imported.encode())
    await expect(apply).to_have_text("Replace my memory")
    await apply.click()
    await expect(status).to_contain_text("Replaced your memory with “notes.md”")
    assert await memory_text(api) == imported
    await reopen_panel(page)
    await page.get_by_test_id("memory-tab-versions").click()
    current = page.locator('[data-testid="memory-version"][data-current="true"]')
    await expect(current.get_by_test_id("memory-version-what")).to_have_text("You imported a file")
    await shot(page, viewport, "versions-undo")
    await current.get_by_test_id("memory-version-undo").click()
    await page.get_by_test_id("confirm-ok").click()
    await expect(status).to_contain_text("Undone")
    assert await memory_text(api) == original
    # the receipt's Undo is gone with it: that import is no longer the newest change
    await reopen_panel(page)
    await expect(page.get_by_test_id("memory-status-undo")).to_be_hidden()
    await api.aclose()
    ui.assert_clean()
