"""The reliability suite's session summary: one line of counts per test (see ``support``), and
its settings (the largest per-run memory write quota)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.reliability.support import LARGEST_MEMORY_QUOTA, summary_lines
from yuxi.settings import Settings


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    """The integration tier's settings, with the largest per-run memory write quota."""
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        db_pool_size=20,
        **LARGEST_MEMORY_QUOTA,
    )


def pytest_terminal_summary(terminalreporter: Any) -> None:
    lines = summary_lines()
    if lines:
        terminalreporter.section("reliability summary")
        for line in lines:
            terminalreporter.write_line(line)
