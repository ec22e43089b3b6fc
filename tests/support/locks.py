"""Proof that a writer really waits for the workspace ``flock``: every refused attempt to take
it is counted (``yuxi.workspace.locking.try_lock`` wrapped), so a test can wait until the
writer has tried and been refused instead of sleeping."""

from __future__ import annotations

import pytest

from yuxi.workspace import locking

__all__ = ["FlockRefusals"]


class FlockRefusals:
    """Counts refused ``flock`` attempts while installed on ``monkeypatch``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        original = locking.try_lock

        def counted(fd: int) -> bool:
            taken = original(fd)
            self.count += not taken
            return taken

        monkeypatch.setattr(locking, "try_lock", counted)
