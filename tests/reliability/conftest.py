"""The reliability suite's session summary: one line of counts per test (see ``support``)."""

from __future__ import annotations

from typing import Any

from .support import summary_lines


def pytest_terminal_summary(terminalreporter: Any) -> None:
    lines = summary_lines()
    if lines:
        terminalreporter.section("reliability summary")
        for line in lines:
            terminalreporter.write_line(line)
