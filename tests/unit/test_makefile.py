"""``make run`` on a fresh clone installs only what serving needs, visibly; the test and check
targets install the dev extras. Checked on make's own plan (``make -n``) for a new venv."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make on PATH")


def _plan(target: str, venv: Path) -> list[str]:
    # A make of its own, not a sub-make of the `make test` that may be running these tests
    # (that one's MAKELEVEL/MAKEFLAGS would add "Entering/Leaving directory" lines).
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", target, f"VENV={venv}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def _installs(lines: list[str]) -> list[str]:
    return [ln for ln in lines if "pip install" in ln and "--upgrade pip" not in ln]


def test_make_run_installs_the_package_without_dev_extras_and_shows_progress(
    tmp_path: Path,
) -> None:
    lines = _plan("run", tmp_path / "venv")
    (install,) = _installs(lines)
    assert install.endswith("-e .")
    assert "[dev]" not in "\n".join(lines)
    assert " -q" not in install  # pip's progress is shown
    assert any(ln.startswith("echo") and "Installing" in ln for ln in lines)
    assert lines[-1].endswith("/bin/yuxi run")


@pytest.mark.parametrize("target", ["test", "check", "unit"])
def test_the_test_targets_install_the_dev_extras(tmp_path: Path, target: str) -> None:
    (install,) = _installs(_plan(target, tmp_path / "venv"))
    assert install.endswith("-e '.[dev]'")


def test_a_python_outside_3_11_to_3_12_is_refused_with_a_hint(tmp_path: Path) -> None:
    fake = tmp_path / "python3.10"
    fake.write_text(
        '#!/bin/sh\nif [ "$1" = "-V" ]; then echo "Python 3.10.0"; exit 0; fi\nexit 1\n'
    )
    fake.chmod(0o755)
    done = subprocess.run(
        ["make", "run", f"VENV={tmp_path / 'venv'}", f"PYTHON={fake}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0
    assert "Yuxi needs Python 3.11 or 3.12" in done.stderr and "Python 3.10.0" in done.stderr
    assert not (tmp_path / "venv").exists()
