"""The browser tier: Playwright (the Python package) driving Debian's ``chromium`` from PATH.

Never downloads a browser. Without one on PATH the tier fails loudly when ``CI`` is set and is
skipped with a clear message otherwise.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import AsyncIterator, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts" / "browser"

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def _chromium() -> str | None:
    return shutil.which("chromium")


@pytest.fixture(scope="session", autouse=True)
def _require_chromium() -> None:
    """Runs before any other fixture of a browser test (no PostgreSQL started for nothing)."""
    if _chromium() is None:
        message = (
            "browser tier: no `chromium` on PATH (install Debian's package: "
            "`apt-get install -y chromium`); Playwright browser downloads are never used"
        )
        if os.environ.get("CI"):
            pytest.fail(message + " — CI is set, so the browser tier is mandatory")
        pytest.skip(message)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Any]:
    from playwright.async_api import async_playwright

    path = _chromium()
    assert path is not None
    async with async_playwright() as p:
        instance = await p.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            await instance.close()


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")[:80]


@dataclass
class UI:
    """One browser page plus the evidence a test leaves behind."""

    page: Any
    name: str
    page_errors: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    foreign_requests: list[str] = field(default_factory=list)
    step: int = 0

    async def shot(self, label: str) -> Path:
        self.step += 1
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{self.name}-{self.step:02d}-{_slug(label)}.png"
        await self.page.screenshot(path=str(path), full_page=True)
        return path

    def assert_clean(self) -> None:
        """No uncaught script errors, no script-level console errors, nothing fetched from
        anywhere but the app itself. (Chromium logs every 4xx as "Failed to load resource";
        the tests provoke some on purpose, e.g. the 412 conflict.)"""
        assert self.page_errors == [], self.page_errors
        errors = [e for e in self.console_errors if "Failed to load resource" not in e]
        assert errors == [], errors
        assert self.foreign_requests == [], self.foreign_requests


@pytest.fixture
async def ui(browser: Any, live_server: Any, request: pytest.FixtureRequest) -> AsyncIterator[UI]:
    from playwright.async_api import expect

    expect.set_options(timeout=20_000)
    context = await browser.new_context(viewport={"width": 1280, "height": 820})
    page = await context.new_page()
    page.set_default_timeout(20_000)
    state = UI(page=page, name=_slug(request.node.name))
    base = live_server.base_url

    page.on("pageerror", lambda exc: state.page_errors.append(str(exc)))
    page.on(
        "console",
        lambda msg: state.console_errors.append(msg.text) if msg.type == "error" else None,
    )

    def _on_request(req: Any) -> None:
        url = req.url
        if not (url.startswith(base + "/") or url == base or url.startswith("data:")):
            state.foreign_requests.append(url)

    page.on("request", _on_request)
    try:
        yield state
    finally:
        failed = getattr(request.node, "rep_call", None)
        if failed is not None and failed.failed:
            try:
                await state.shot("FAILED")
            except Exception as exc:  # the page may be gone; the report matters more
                print(f"could not take the failure screenshot: {exc}")
            log = Path(live_server.log_path)
            if log.exists():
                print("---- server log (tail) ----")
                print(log.read_text(errors="replace")[-6000:])
        await context.close()


# -- helpers shared by the browser tests ---------------------------------------------------------


def tool_event(page: Any, name: str) -> Any:
    return page.locator(f'[data-testid="tool-event"][data-tool-name="{name}"]')


async def send(page: Any, text: str) -> None:
    from playwright.async_api import expect

    await expect(page.get_by_test_id("send")).to_be_enabled()
    await page.get_by_test_id("message-input").fill(text)
    await page.get_by_test_id("send").click()


async def wait_idle(page: Any) -> None:
    from playwright.async_api import expect

    await expect(page.get_by_test_id("run-status")).to_be_hidden()
    await expect(page.locator('[data-testid="message"][data-streaming="true"]')).to_have_count(0)
