"""The Account dialog in a real Chromium against a real ``yuxi serve``: "Download export" saves
the whole account as a zip (``GET /api/v1/me/export`` with the Bearer header, through an object
URL that is revoked afterwards) holding what was planted first; a failed export says why in the
dialog. Deleting asks for the account's name and enables its button only for the exact name; a
refusal shows the server's message and deletes nothing; a deletion signs out, says so on the
sign-in screen, leaves every token of the account refused and its workspace gone, and another
user untouched. Both dialogs fit a 390 px phone and answer Escape.

Screenshots for review only when asked for: ``YUXI_UI_SCREENS=dir`` writes
``dir/account-ui-*.png``. Every test ends with ``ui.assert_clean()`` (no script error, no CSP
violation).
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import expect

from tests.browser.conftest import UI, send, wait_idle
from tests.browser.memory_helpers import open_app, put_memory
from tests.browser.screens import review_shot
from tests.support.server import LiveServer, create_user_with_token
from yuxi.bootstrap import Container

pytestmark = pytest.mark.browser

TOKEN = "localStorage.getItem('yuxi.token')"
#: Records the object URLs the page makes and revokes (run through DevTools, not the page's CSP).
WATCH_BLOBS = """() => {
  window.blobUrls = { made: [], revoked: [] };
  const make = URL.createObjectURL.bind(URL);
  const revoke = URL.revokeObjectURL.bind(URL);
  URL.createObjectURL = (o) => { const u = make(o); window.blobUrls.made.push(u); return u; };
  URL.revokeObjectURL = (u) => { window.blobUrls.revoked.push(u); revoke(u); };
}"""


async def screen(page: Any, name: str) -> None:
    await review_shot(page, f"account-ui-{name}")


async def open_account(page: Any) -> Any:
    await page.get_by_test_id("account-button").click()
    dialog = page.get_by_test_id("account-dialog")
    await expect(dialog).to_be_visible()
    await expect(page.get_by_test_id("account-button")).to_have_attribute("aria-expanded", "true")
    return dialog


async def test_export_downloads_the_whole_account_as_a_zip(
    live_server: LiveServer, container: Container, ui: UI
) -> None:
    page = ui.page
    await page.set_viewport_size({"width": 1280, "height": 800})
    name = "kiri 桐"
    api = await open_app(live_server, container, ui, name)
    uid = (await api.get("/api/v1/me")).json()["uid"]
    await put_memory(api, "- planted memory qzx-oolong\n")
    await send(page, "planted message qzx-thread <b>not bold</b>")
    await expect(page.get_by_test_id("assistant-reply")).to_have_count(1)
    await wait_idle(page)

    dialog = await open_account(page)
    await expect(page.get_by_test_id("account-name")).to_have_text(name)
    await expect(page.get_by_test_id("account-uid")).to_have_text(uid)
    await expect(page.get_by_test_id("account-export")).to_be_focused()
    await screen(page, "1280-account-panel")

    # -- the download: a zip named after the account, holding what was planted ----------------
    await page.evaluate(WATCH_BLOBS)
    async with page.expect_download() as info:
        await page.get_by_test_id("account-export").click()
    download = await info.value
    assert download.suggested_filename == "yuxi-account-kiri-桐.zip"
    data = Path(await download.path()).read_bytes()
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert zf.testzip() is None
        entries = {entry: zf.read(entry) for entry in zf.namelist()}
    manifest = json.loads(entries["account.json"])
    assert manifest["user"]["uid"] == uid and manifest["user"]["name"] == name
    assert manifest["counts"]["threads"] == 1
    assert b"qzx-oolong" in entries["memory/MEMORY.md"]
    threads = [entry for entry in entries if entry.startswith("threads/")]
    assert len(threads) == 1 and b"qzx-thread" in entries[threads[0]]
    status = page.get_by_test_id("account-export-status")
    await expect(status).to_contain_text("Downloaded yuxi-account-kiri-桐.zip")
    await expect(page.get_by_test_id("account-export")).to_be_enabled()
    await page.wait_for_function(
        "() => window.blobUrls.made.length === 1"
        " && window.blobUrls.revoked.includes(window.blobUrls.made[0])"
    )
    await screen(page, "1280-account-exported")

    # -- a failed export says why, in the dialog; nothing is saved -----------------------------
    async def refuse(route: Any) -> None:
        await route.fulfill(
            status=507,
            content_type="application/json",
            body=json.dumps(
                {"error": {"code": "storage_full", "message": "The data disk is <full>."}}
            ),
        )

    await page.route("**/api/v1/me/export", refuse)
    await page.get_by_test_id("account-export").click()
    await expect(status).to_have_text("Export failed: The data disk is <full>.")
    await expect(page.get_by_test_id("account-export")).to_be_enabled()
    await page.unroute("**/api/v1/me/export")
    assert await page.evaluate("window.blobUrls.made.length") == 1

    # -- Escape closes it, and focus goes back to the Account button ---------------------------
    await page.keyboard.press("Escape")
    await expect(dialog).to_be_hidden()
    await expect(page.get_by_test_id("account-button")).to_have_attribute("aria-expanded", "false")
    await expect(page.get_by_test_id("account-button")).to_be_focused()
    await expect(page.get_by_test_id("app-view")).to_be_visible()
    await api.aclose()
    ui.assert_clean()


async def test_delete_needs_the_exact_name_then_signs_out_and_removes_only_this_account(
    live_server: LiveServer, container: Container, ui: UI
) -> None:
    page = ui.page
    await page.set_viewport_size({"width": 1280, "height": 800})
    other_uid, other_token = await create_user_with_token(container, "bystander")
    other = live_server.client(other_token)
    await put_memory(other, "- the bystander's memory\n")
    name = "lin 林"
    api = await open_app(live_server, container, ui, name)
    uid = (await api.get("/api/v1/me")).json()["uid"]
    await put_memory(api, "- soon gone\n")
    assert container.workspace(uid).directory.is_dir()
    session_token = await page.evaluate(TOKEN)
    assert session_token

    await open_account(page)
    await page.get_by_test_id("account-delete").click()
    confirm = page.get_by_test_id("account-delete-dialog")
    await expect(confirm).to_be_visible()
    what = page.get_by_test_id("account-delete-list")
    for words in ("thread", "memory", "versions", "workspace files", "tokens"):
        await expect(what).to_contain_text(words)
    await expect(confirm).to_contain_text("This cannot be undone.")
    await expect(confirm.locator("[data-account-name]")).to_have_text([name, name])
    typed = page.get_by_test_id("account-delete-input")
    button = page.get_by_test_id("account-delete-confirm")
    await expect(typed).to_be_focused()

    # -- only the exact name enables Delete; Enter does nothing before ---------------------------
    await expect(button).to_be_disabled()
    hint = page.get_by_test_id("account-delete-error")
    for wrong in ("lin", "lin林", "LIN 林", f"{name} ", f" {name}"):
        await typed.fill(wrong)
        await expect(button).to_be_disabled()
        if wrong.strip().lower() == name.lower():  # nearly the name: told why
            await expect(hint).to_have_text(
                "Not quite: type the name exactly as shown (capitals and spaces count)."
            )
            await screen(page, "1280-delete-nearly-the-name")
        else:
            await expect(hint).to_be_hidden()
    await typed.press("Enter")
    await expect(confirm).to_be_visible()
    await typed.fill(name)
    await expect(button).to_be_enabled()
    await screen(page, "1280-delete-dialog")

    await expect(page.get_by_test_id("account-dialog")).to_be_hidden()  # one at a time

    # -- Escape cancels the question only: back to the account dialog, nothing deleted ----------
    await page.keyboard.press("Escape")
    await expect(confirm).to_be_hidden()
    await expect(page.get_by_test_id("account-dialog")).to_be_visible()
    await expect(page.get_by_test_id("account-delete")).to_be_focused()
    assert (await api.get("/api/v1/me")).status_code == 200
    await page.get_by_test_id("account-delete").click()
    await expect(typed).to_have_value("")
    await expect(button).to_be_disabled()

    # -- a refusal shows the server's message; nothing is deleted -------------------------------
    async def other_name(route: Any) -> None:
        if route.request.method == "DELETE":
            await route.continue_(post_data=json.dumps({"confirm": "someone else"}))
        else:
            await route.continue_()

    await page.route("**/api/v1/me", other_name)
    await typed.fill(name)
    async with page.expect_response(lambda r: r.request.method == "DELETE") as refused:
        await button.click()
    assert (await refused.value).status == 400
    error = page.get_by_test_id("account-delete-error")
    await expect(error).to_have_text(
        "Not deleted: confirm must be the account's name; nothing was deleted"
    )
    await expect(confirm).to_be_visible()
    await expect(button).to_be_enabled()
    await page.unroute("**/api/v1/me")
    assert (await api.get("/api/v1/me")).status_code == 200
    assert container.workspace(uid).directory.is_dir()

    # -- the deletion (Enter in the name field): signed out, and the sign-in screen says so -----
    async with page.expect_response(lambda r: r.request.method == "DELETE") as deleted:
        await typed.press("Enter")
    response = await deleted.value
    assert response.status == 200
    assert (await response.json())["deleted"]["uid"] == uid
    await expect(page.get_by_test_id("signin-view")).to_be_visible()
    await expect(page.get_by_test_id("app-view")).to_be_hidden()
    await expect(confirm).to_be_hidden()
    await expect(page.get_by_test_id("account-dialog")).to_be_hidden()
    notice = page.get_by_test_id("signin-notice")
    await expect(notice).to_contain_text(f"The account “{name}” was deleted")
    await expect(page.get_by_test_id("signin-error")).to_be_hidden()
    await expect(page.get_by_test_id("token-input")).to_be_focused()
    await expect(page.get_by_test_id("user-name")).to_have_text("")
    await expect(page.get_by_test_id("thread-list")).to_be_empty()
    assert await page.evaluate(TOKEN) is None
    await screen(page, "1280-deleted")

    # every token of the account is refused, its workspace is gone; the bystander is untouched
    assert (await api.get("/api/v1/me")).status_code == 401
    async with live_server.client(session_token) as session:
        assert (await session.get("/api/v1/me")).status_code == 401
    assert not container.workspace(uid).directory.exists()
    assert (await other.get("/api/v1/me")).json()["uid"] == other_uid
    memory = await other.get("/api/v1/workspace/files/agents/MEMORY.md")
    assert memory.text == "- the bystander's memory\n"
    assert container.workspace(other_uid).directory.is_dir()

    # a reload stays signed out (the token is gone), and the notice went with the old page
    await page.reload()
    await expect(page.get_by_test_id("signin-view")).to_be_visible()
    await expect(notice).to_be_hidden()
    await api.aclose()
    await other.aclose()
    ui.assert_clean()


async def test_account_dialogs_fit_a_phone_and_answer_the_keyboard(
    live_server: LiveServer, container: Container, ui: UI
) -> None:
    page = ui.page
    await page.set_viewport_size({"width": 390, "height": 844})
    name = "mio a-rather-long-account-name 長い名前"
    api = await open_app(live_server, container, ui, name)

    await expect(page.get_by_test_id("account-button")).to_be_visible()
    dialog = await open_account(page)
    box = await dialog.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    assert box["y"] >= 0 and box["y"] + box["height"] <= 844, box
    await expect(page.get_by_test_id("account-export")).to_be_focused()
    await screen(page, "390-account-panel")

    # the keyboard alone: Tab reaches "Delete my account…", Enter opens the question
    for _ in range(5):
        if await page.get_by_test_id("account-delete").evaluate(
            "b => b === document.activeElement"
        ):
            break
        await page.keyboard.press("Tab")
    await expect(page.get_by_test_id("account-delete")).to_be_focused()
    await page.keyboard.press("Enter")
    confirm = page.get_by_test_id("account-delete-dialog")
    await expect(confirm).to_be_visible()
    await page.keyboard.type(name)
    await expect(page.get_by_test_id("account-delete-confirm")).to_be_enabled()
    box = await confirm.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    assert box["y"] >= 0 and box["y"] + box["height"] <= 844, box
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, width
    await screen(page, "390-delete-dialog")

    # Escape twice: the question, then the dialog; nothing deleted
    await page.keyboard.press("Escape")
    await expect(confirm).to_be_hidden()
    await page.keyboard.press("Escape")
    await expect(dialog).to_be_hidden()
    await expect(page.get_by_test_id("app-view")).to_be_visible()
    assert (await api.get("/api/v1/me")).status_code == 200

    # Sign out while the dialog was used: signing in again shows a fresh one
    await page.get_by_test_id("sign-out").click()
    await expect(page.get_by_test_id("signin-view")).to_be_visible()
    await expect(page.get_by_test_id("signin-notice")).to_be_hidden()
    await expect(page.get_by_test_id("account-name")).to_have_text("")
    await api.aclose()
    ui.assert_clean()
