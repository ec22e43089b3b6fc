"""Import… in the memory panel (issue 27) in a real Chromium against a real ``yuxi serve``: a
picked file is previewed (the diff against the current file and the lint findings) and nothing
is written until Apply; Cancel writes nothing; Apply writes it as one "imported a file" version
the status line can undo; a file the server refuses shows why and writes nothing; a memory that
changed since the preview is never overwritten blind (the preview is shown again against it);
another user's export document imports byte for byte.

Ends with ``ui.assert_clean()``: no script error, no console error, no CSP violation.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.async_api import expect

from tests.browser.conftest import UI
from tests.browser.memory_helpers import entry_texts, memory_text, open_app, open_panel, put_memory
from tests.support.server import LiveServer, create_user_with_token
from yuxi.bootstrap import Container

pytestmark = pytest.mark.browser

SECRET = "sk-proj-4fGh2KLmN8pQrS7tUvWx9yZa"


async def pick(page: Any, name: str, data: bytes, mime: str = "text/markdown") -> None:
    """Click Import… and choose a file in the chooser it opens."""
    async with page.expect_file_chooser() as chooser:
        await page.get_by_test_id("memory-import").click()
    await (await chooser.value).set_files(files=[{"name": name, "mimeType": mime, "buffer": data}])


async def test_import_previews_the_diff_and_findings_before_apply(
    live_server: LiveServer, container: Container, ui: UI
) -> None:
    page = ui.page
    api = await open_app(live_server, container, ui, "iris")
    original = "- 旧的事实\n"
    await put_memory(api, original)
    versions = (await api.get("/api/v1/memory/versions")).json()["versions"]
    await open_panel(page)
    preview = page.get_by_test_id("memory-import-preview")
    status = page.get_by_test_id("memory-status")

    # -- the preview: entries, diff, findings; nothing written ---------------------------------
    imported = f"- 旧的事实\n- 新的事实\n- key {SECRET}\n"
    await pick(page, "notes.md", imported.encode())
    await expect(preview).to_have_attribute("data-ready", "true")
    await expect(page.get_by_test_id("memory-import-summary")).to_contain_text(
        "“notes.md” replaces your 1 entry with its 3 entries"
    )
    diff = page.get_by_test_id("memory-import-diff-lines")
    await expect(diff.locator('[data-diff="add"]')).to_have_text(
        ["+- 新的事实\n", f"+- key {SECRET}\n"]
    )
    finding = page.get_by_test_id("memory-import-finding")
    await expect(finding).to_have_count(1)
    await expect(finding).to_have_attribute("data-code", "secret_like")
    await expect(finding).to_contain_text("Looks like a secret (line 3)")
    await ui.shot("import-preview")
    assert await memory_text(api) == original
    assert (await api.get("/api/v1/memory/versions")).json()["versions"] == versions

    # -- Cancel writes nothing ----------------------------------------------------------------
    await page.get_by_test_id("memory-import-cancel").click()
    await expect(preview).to_be_hidden()
    await expect(status).to_contain_text("nothing was written")
    assert await memory_text(api) == original

    # -- Apply writes it as one import version, undoable --------------------------------------
    await pick(page, "notes.md", imported.encode())
    await expect(preview).to_have_attribute("data-ready", "true")
    await page.get_by_test_id("memory-import-apply").click()
    await expect(status).to_contain_text("Replaced your memory with “notes.md”")
    await expect(preview).to_be_hidden()
    await expect(entry_texts(page)).to_have_text(["- 旧的事实", "- 新的事实", f"- key {SECRET}"])
    sources = page.locator(
        '[data-testid="memory-entry"]:visible [data-testid="memory-entry-source"]'
    )
    await expect(sources.nth(0)).to_contain_text("edited by you")  # it was there before
    await expect(sources.nth(1)).to_contain_text("imported by you")
    await expect(sources.nth(1)).to_have_attribute("data-kind", "import")
    assert await memory_text(api) == imported
    newest = (await api.get("/api/v1/memory/versions")).json()["versions"][0]
    assert (newest["actor"], newest["kind"]) == ("user", "import")
    await page.get_by_test_id("memory-tab-versions").click()
    first = page.get_by_test_id("memory-version").first
    await expect(first.get_by_test_id("memory-version-what")).to_have_text("You imported a file")
    await page.get_by_test_id("memory-status-undo").click()
    await expect(status).to_contain_text("Import undone")
    assert await memory_text(api) == original

    # -- a file the server refuses: why, and nothing written -----------------------------------
    await pick(page, "broken.md", b"- caf\xe9\n")
    await expect(status).to_contain_text("Not imported: the imported file is not valid UTF-8")
    await expect(preview).to_be_hidden()
    assert await memory_text(api) == original
    await api.aclose()
    ui.assert_clean()


async def test_an_import_never_lands_on_a_memory_changed_since_its_preview(
    live_server: LiveServer, container: Container, ui: UI
) -> None:
    page = ui.page
    api = await open_app(live_server, container, ui, "jude")
    await put_memory(api, "- 我的旧记忆\n")
    # another user's export document, as a download would have saved it
    _, other_token = await create_user_with_token(container, "kai")
    other = live_server.client(other_token)
    await put_memory(other, "- 喝乌龙茶\n\n- 住在杭州\n")
    exported = (await other.get("/api/v1/memory/export")).content
    await open_panel(page)

    await pick(page, "memory-export.json", exported, "application/json")
    preview = page.get_by_test_id("memory-import-preview")
    await expect(preview).to_have_attribute("data-ready", "true")
    await expect(page.get_by_test_id("memory-import-findings-none")).to_be_visible()
    # the assistant (or another tab) writes meanwhile
    await put_memory(api, "- 我的旧记忆\n- 刚刚写的\n")
    await page.get_by_test_id("memory-import-apply").click()
    status = page.get_by_test_id("memory-status")
    await expect(status).to_contain_text("changed since the preview")
    await expect(
        page.get_by_test_id("memory-import-diff-lines").locator('[data-diff="del"]')
    ).to_have_text(["-- 我的旧记忆\n", "-- 刚刚写的\n"])
    assert await memory_text(api) == "- 我的旧记忆\n- 刚刚写的\n"

    await page.get_by_test_id("memory-import-apply").click()
    await expect(status).to_contain_text("Replaced your memory with “memory-export.json”")
    assert await memory_text(api) == await memory_text(other)
    await api.aclose()
    await other.aclose()
    ui.assert_clean()
