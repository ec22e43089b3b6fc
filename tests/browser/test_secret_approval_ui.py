"""A secret-shaped memory write, in a real Chromium against a real ``yuxi serve``, PostgreSQL and
the offline model: the user's own ``remember:`` of an API key (no untrusted input in the run)
waits on an approval card that says why — "looks like a secret: an API key", never the key in the
reason — Reject writes nothing, Approve writes it once.

Ends with ``ui.assert_clean()``: no script error, no console error, no CSP violation.
"""

from __future__ import annotations

import pytest
from playwright.async_api import expect

from tests.browser.conftest import UI, send, wait_idle
from tests.browser.memory_helpers import memory_text, open_app
from tests.support.server import LiveServer
from yuxi.bootstrap import Container

pytestmark = pytest.mark.browser

KEY = "sk-proj-4fGh2KLmN8pQrS7tUvWx9yZaBROWSER1"


async def test_the_approval_card_of_a_secret_says_why(
    live_server: LiveServer, container: Container, ui: UI
) -> None:
    page = ui.page
    api = await open_app(live_server, container, ui, "ines")

    # the user's own request, nothing read before it: held only because it looks like a secret
    await send(page, f"remember: 我的 API key 是 {KEY}")
    card = page.locator('[data-testid="approval-card"][data-state="pending"]')
    await expect(card).to_be_visible()
    action = card.get_by_test_id("approval-action")
    await expect(action).to_have_attribute("data-kind", "memory")
    await expect(action.get_by_test_id("approval-memory-content")).to_have_text(
        f"我的 API key 是 {KEY}"
    )
    reason = action.get_by_test_id("approval-reason")
    await expect(reason).to_contain_text("looks like a secret: an API key")
    await expect(reason).not_to_contain_text(KEY)
    await expect(reason).not_to_contain_text("read other conversations")
    assert await memory_text(api) == ""
    await ui.shot("secret-approval-card")

    # Reject: nothing written, the card says so
    await card.get_by_test_id("reject").click()
    await expect(
        page.locator('[data-testid="approval-card"][data-state="rejected"]')
    ).to_have_count(1)
    await wait_idle(page)
    assert await memory_text(api) == ""
    await expect(page.get_by_test_id("memory-receipt")).to_have_count(0)

    # the same request again, approved: written once, with its receipt
    await send(page, "remember: prod db is postgres://admin:S3cret2024@db.internal/prod")
    card = page.locator('[data-testid="approval-card"][data-state="pending"]')
    await expect(card.get_by_test_id("approval-reason")).to_contain_text(
        "looks like a secret: a connection URL with a password"
    )
    await card.get_by_test_id("approve").click()
    await expect(page.get_by_test_id("memory-receipt")).to_have_count(1)
    await wait_idle(page)
    assert await memory_text(api) == "prod db is postgres://admin:S3cret2024@db.internal/prod\n"
    await api.aclose()
    ui.assert_clean()
