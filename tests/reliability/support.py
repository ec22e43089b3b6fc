"""Helpers shared by the reliability suite (R1–R6 of issue 6).

Every test chooses its sizes from ``YUXI_SOAK``: unset → the reduced, time-bounded form that
``make test`` runs; set (``make soak``) → the full form. Each test records one summary line with
its counts; the lines are printed at the end of the session and written, with any numbers the
test wants to keep, to ``artifacts/reliability/``.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: The per-run memory write quota at its largest: the suite's writers each stand for many agent
#: runs (hundreds of writes on one run row); the quota has its own boundary tests
#: (tests/integration/test_memory_quota.py).
LARGEST_MEMORY_QUOTA: dict[str, Any] = {
    "memory_writes_per_run": 1000,
    "memory_bytes_per_run": 1024 * 1024,
}
ARTIFACTS = ROOT / "artifacts" / "reliability"
SUMMARY: list[str] = []


def soak() -> bool:
    """True in the full (``make soak``) form of the suite."""
    return bool(os.environ.get("YUXI_SOAK"))


def scale(reduced: int, full: int) -> int:
    return full if soak() else reduced


def mode() -> str:
    return "full" if soak() else "reduced"


def report(test: str, **counts: Any) -> str:
    """Print (and keep for the session summary) one line of counts for ``test``."""
    parts = " ".join(f"{key}={value}" for key, value in counts.items())
    line = f"[reliability] {test} ({mode()}): {parts}"
    print(line, flush=True)
    SUMMARY.append(line)
    slug = re.sub(r"[^a-z0-9]+", "-", test.lower()).strip("-")
    write_artifact(f"{slug}.json", {"mode": mode(), "summary": line, **counts})
    return line


def write_artifact(name: str, data: dict[str, Any]) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    payload = {"written_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **data}
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False, default=str) + "\n")
    return path


def summary_lines() -> list[str]:
    return list(SUMMARY)


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), math.ceil(q / 100 * len(ordered))))
    return ordered[rank - 1]


# Long enough for the full form; the reduced form stays far below the ini default.
TIMEOUT = pytest.mark.timeout(3600 if soak() else 300)
