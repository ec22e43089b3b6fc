"""The thread delete dialog (issue 27 §1) in a real Chromium against a real ``yuxi serve``,
PostgreSQL and the offline model: it shows the lines of memory the thread wrote (as text, never
markup), Cancel keeps everything, deleting without the choice leaves MEMORY.md byte-identical,
and "Also forget these lines" removes exactly them in one ``forget`` version the memory status
line can undo. Ends with ``ui.assert_clean()`` (no script error, no CSP violation)."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.async_api import expect

from tests.browser.conftest import UI, send, wait_idle
from tests.browser.memory_helpers import memory_text, open_app, put_memory
from tests.support.server import LiveServer
from yuxi.bootstrap import Container

pytestmark = pytest.mark.browser

LINE = "I drink oolong tea 乌龙 *plain* &amp;"


async def _remember(page: Any, text: str) -> None:
    """Send ``remember: text`` and wait for its receipt (the run has written) and the end."""
    await send(page, f"remember: {text}")
    receipt = page.get_by_test_id("memory-receipt")
    await expect(receipt.filter(has_text=text)).to_have_attribute("data-state", "saved")
    await wait_idle(page)


async def test_delete_dialog_shows_the_threads_lines_and_forgets_them_only_when_asked(
    live_server: LiveServer, container: Container, ui: UI
) -> None:
    page = ui.page
    api = await open_app(live_server, container, ui, "fern")
    await put_memory(api, "mine: keep me\n")
    await _remember(page, LINE)
    assert LINE in await memory_text(api)
    dialog = page.get_by_test_id("confirm-dialog")

    # -- the dialog lists what the thread wrote; Cancel changes nothing -----------------------
    await page.get_by_test_id("delete-thread").click()
    await expect(dialog).to_be_visible()
    await expect(dialog.get_by_test_id("forget-line")).to_have_text([LINE])
    assert await dialog.locator("em").count() == 0  # text, not markup
    choice = dialog.get_by_test_id("forget-memory")
    await expect(choice).not_to_be_checked()
    await ui.shot("delete-dialog-with-memory")
    await page.get_by_test_id("confirm-cancel").click()
    await expect(dialog).to_be_hidden()
    await expect(page.get_by_test_id("thread-item")).to_have_count(1)

    # -- forget with the thread ----------------------------------------------------------------
    await page.get_by_test_id("delete-thread").click()
    await dialog.get_by_test_id("forget-memory").check()
    async with page.expect_response(
        lambda r: "forget_memory=true" in r.url and r.request.method == "DELETE"
    ) as deleted:
        await page.get_by_test_id("confirm-ok").click()
    response = await deleted.value
    assert response.status == 200
    body = await response.json()
    assert body["removed"] == [LINE]
    await expect(page.get_by_test_id("thread-item")).to_have_count(0)
    after = await memory_text(api)
    assert LINE not in after and "mine: keep me" in after
    versions = (await api.get("/api/v1/memory/versions")).json()["versions"]
    assert (versions[0]["kind"], versions[0]["version_id"]) == (
        "forget",
        body["version"]["version_id"],
    )
    await ui.shot("forgotten")

    # -- the memory status line offers Undo of the forget --------------------------------------
    await page.get_by_test_id("memory-panel-button").click()
    status = page.get_by_test_id("memory-status")
    await expect(status).to_have_text("Forgot 1 line with the deleted thread.")
    await page.get_by_test_id("memory-status-undo").click()
    await expect(status).to_have_text("Forgetting undone.")
    assert LINE in await memory_text(api)
    await page.get_by_test_id("memory-panel-button").click()
    await expect(page.get_by_test_id("memory-panel")).to_be_hidden()

    # -- deleting without the choice leaves memory byte-identical ------------------------------
    await page.get_by_test_id("new-thread").click()
    await _remember(page, "Green tea on Sundays")
    before = await memory_text(api)
    await page.get_by_test_id("delete-thread").click()
    await expect(dialog.get_by_test_id("forget-line")).to_have_text(["Green tea on Sundays"])
    async with page.expect_response(
        lambda r: "/api/v1/threads/" in r.url and r.request.method == "DELETE"
    ) as deleted:
        await page.get_by_test_id("confirm-ok").click()
    assert (await deleted.value).status == 204
    await expect(page.get_by_test_id("thread-item")).to_have_count(0)
    assert await memory_text(api) == before

    # -- a thread that wrote nothing says so and offers no choice ------------------------------
    await page.get_by_test_id("new-thread").click()
    await send(page, "hello")
    await expect(page.get_by_test_id("thread-item")).to_have_count(1)
    await wait_idle(page)
    await page.get_by_test_id("delete-thread").click()
    await expect(dialog.get_by_test_id("forget-note")).to_contain_text("Nothing this thread wrote")
    await expect(dialog.get_by_test_id("forget-memory")).to_have_count(0)
    await page.get_by_test_id("confirm-cancel").click()
    ui.assert_clean()
