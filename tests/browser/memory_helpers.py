"""Helpers of the memory browser tests: a signed-in page with memory on, MEMORY.md over the API."""

from __future__ import annotations

from typing import Any

import httpx
from playwright.async_api import expect

from tests.browser.conftest import UI
from tests.support.server import LiveServer, create_user_with_token, login_link
from yuxi.bootstrap import Container

MEMORY = "/api/v1/workspace/files/agents/MEMORY.md"


async def open_app(
    live_server: LiveServer, container: Container, ui: UI, name: str
) -> httpx.AsyncClient:
    uid, token = await create_user_with_token(container, name)
    api = live_server.client(token)
    assert (await api.put("/api/v1/me/config", json={"enable_memory": True})).status_code == 200
    await ui.page.goto(await login_link(live_server, container, uid))
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
