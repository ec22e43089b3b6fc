"""Screenshots for a person to review, taken only when asked for: ``YUXI_UI_SCREENS=dir``.

(Every test's own step screenshots go to ``artifacts/browser`` through ``UI.shot``; these are
named for review, at the viewport the test set.)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


async def review_shot(page: Any, name: str) -> None:
    """``page`` as ``$YUXI_UI_SCREENS/<name>.png``; nothing when the variable is unset."""
    folder = os.environ.get("YUXI_UI_SCREENS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=str(Path(folder) / f"{name}.png"))


def record_posts(page: Any, matches: Any) -> list[str]:
    """The URLs of the POST requests the page sends from now on whose URL ``matches``."""
    seen: list[str] = []
    page.on(
        "request", lambda r: seen.append(r.url) if r.method == "POST" and matches(r.url) else None
    )
    return seen
