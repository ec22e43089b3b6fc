"""``make run`` on a fresh clone installs only what serving needs, visibly; the test and check
targets install the dev extras. Every install comes from a lock in ``requirements/`` (exact
versions with hashes), which ``make check`` and each install hold to ``pyproject.toml``, and every
package the code, the tests or the benchmarks import is declared there. Checked on make's own plan
(``make -n``) for a new venv, and on copies of the project with a changed dependency."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions, requires
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOCK_TOOL = ROOT / "requirements" / "lock.py"
TARGETS = [
    "run",
    "test",
    "check",
    "format",
    "unit",
    "integration",
    "e2e",
    "browser",
    "soak",
    "bench",
]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make on PATH")


def _make_env() -> dict[str, str]:
    # A make of its own, not a sub-make of the `make test` that may be running these tests
    # (that one's MAKELEVEL/MAKEFLAGS would add "Entering/Leaving directory" lines).
    return {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}


def _plan(target: str, venv: Path) -> list[str]:
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", target, f"VENV={venv}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=_make_env(),
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def _installs(lines: list[str]) -> list[str]:
    return [ln for ln in lines if "pip install" in ln]


def test_make_run_installs_the_serve_lock_then_the_project_and_shows_progress(
    tmp_path: Path,
) -> None:
    lines = _plan("run", tmp_path / "venv")
    lock, project = _installs(lines)
    assert lock.endswith(
        "-m pip install --progress-bar on --require-hashes -r requirements/serve.txt"
    )
    assert project.endswith("-m pip install -q --no-deps --no-build-isolation -e .")
    assert "[dev]" not in "\n".join(lines) and "dev.txt" not in "\n".join(lines)
    assert any(ln.startswith("echo") and "Installing" in ln for ln in lines)
    # the lock is checked against pyproject.toml before anything is installed
    assert lines.index(lock) > next(i for i, ln in enumerate(lines) if "lock.py check" in ln)
    assert lines[-1].endswith("/bin/yuxi run")


@pytest.mark.parametrize("target", ["test", "check", "unit"])
def test_the_test_targets_install_the_dev_lock(tmp_path: Path, target: str) -> None:
    lock, project = _installs(_plan(target, tmp_path / "venv"))
    assert lock.endswith("--require-hashes -r requirements/dev.txt")
    assert project.endswith("--no-deps --no-build-isolation -e .")


@pytest.mark.parametrize("target", TARGETS)
def test_every_install_of_every_target_comes_from_a_lock(tmp_path: Path, target: str) -> None:
    lines = _plan(target, tmp_path / "venv")
    installs = [ln for ln in lines if re.search(r"\bpip install\b", ln)]
    assert installs, target
    for line in installs:
        from_lock = re.search(r"--require-hashes -r requirements/(serve|dev)\.txt$", line)
        assert from_lock or "--no-deps" in line.split(), line
        assert "--upgrade" not in line, line  # nothing newer than the lock, pip included


def test_make_check_runs_the_lock_check_before_the_linters(tmp_path: Path) -> None:
    lines = _plan("check", tmp_path / "venv")
    checks = [i for i, ln in enumerate(lines) if ln.endswith("requirements/lock.py check")]
    assert checks and max(checks) < next(i for i, ln in enumerate(lines) if "ruff" in ln)


def test_make_check_passes_on_a_fresh_lock_and_fails_on_a_stale_one(tmp_path: Path) -> None:
    """A real ``make check`` in a copy of the project, with a venv whose python is this one
    (the lock check needs only the standard library) and whose linters pass anything."""
    project = _project_copy(tmp_path)
    shutil.copy(ROOT / "Makefile", project / "Makefile")
    shutil.copy(LOCK_TOOL, project / "requirements" / "lock.py")
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    for tool in ("ruff", "mypy"):
        (venv / "bin" / tool).write_text("#!/bin/sh\nexit 0\n")
        (venv / "bin" / tool).chmod(0o755)
    # the project's files as of a while ago, installed since (the stamps)
    long_ago = (project / "pyproject.toml").stat().st_mtime - 100
    for path in project.rglob("*"):
        os.utime(path, (long_ago, long_ago))
    for stamp in (".installed-serve", ".installed-dev"):
        (venv / stamp).touch()
        os.utime(venv / stamp, (long_ago + 50, long_ago + 50))

    def make_check() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["make", "--no-print-directory", "check", f"VENV={venv}"],
            cwd=project,
            capture_output=True,
            text=True,
            env=_make_env(),
        )

    fresh = make_check()
    assert fresh.returncode == 0, fresh.stderr
    _edit(project / "pyproject.toml", '"alembic>=1.14,<2"', '"alembic>=1.15,<2"')
    stale = make_check()
    assert stale.returncode != 0
    assert "requirements/serve.txt and requirements/dev.txt no longer match" in stale.stderr
    assert "pip install" not in stale.stdout  # stopped before installing anything


def test_make_lock_refreshes_both_locks_with_a_pinned_uv_outside_the_project_env(
    tmp_path: Path,
) -> None:
    venv = tmp_path / "venv"
    lines = _plan("lock", venv)
    (install,) = [ln for ln in lines if "pip install" in ln]
    assert re.search(r"--target \S+/\.lock-tools 'uv==\d+\.\d+\.\d+'$", install), install
    assert (
        lines[-1]
        == f"{venv}/bin/python requirements/lock.py refresh --uv {venv}/.lock-tools/bin/uv"
    )
    upgrade = subprocess.run(
        ["make", "--no-print-directory", "-n", "lock", f"VENV={venv}", "UPGRADE=1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=_make_env(),
        check=True,
    )
    assert upgrade.stdout.splitlines()[-1].endswith(" --upgrade")


def test_ci_installs_only_through_make() -> None:
    script = (ROOT / ".ci" / "run").read_text("utf-8")
    commands = [ln.strip() for ln in script.splitlines() if not ln.strip().startswith("#")]
    assert not [ln for ln in commands if re.search(r"\bpip3? install\b|\buv\b", ln)]
    assert commands.index("make check") < commands.index("make test")


# -- the lock check ----------------------------------------------------------------------------


def _project_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "project"
    (copy / "requirements").mkdir(parents=True)
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    for name in ("serve.txt", "dev.txt"):
        shutil.copy(ROOT / "requirements" / name, copy / "requirements" / name)
    return copy


def _lock_check(project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(LOCK_TOOL), "--root", str(project), "check"],
        capture_output=True,
        text=True,
    )


def test_the_committed_locks_match_pyproject() -> None:
    done = _lock_check(ROOT)
    assert done.returncode == 0, done.stderr


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text("utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), "utf-8")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('"alembic>=1.14,<2"', '"alembic>=1.15,<2"'),  # a bound moved
        ('"tqdm>=4.66,<5",', '"tqdm>=4.66,<5", "rich>=13",'),  # a dependency added
        ('"pyyaml>=6,<7",\n', ""),  # a dev dependency removed
        ('requires-python = ">=3.11,<3.13"', 'requires-python = ">=3.11,<3.14"'),
        ('requires = ["setuptools>=69", "wheel"]', 'requires = ["setuptools>=70", "wheel"]'),
    ],
)
def test_the_lock_check_fails_when_pyproject_changes_a_dependency(
    tmp_path: Path, old: str, new: str
) -> None:
    project = _project_copy(tmp_path)
    assert _lock_check(project).returncode == 0
    _edit(project / "pyproject.toml", old, new)
    done = _lock_check(project)
    assert done.returncode == 1
    assert "no longer match pyproject.toml" in done.stderr and "make lock" in done.stderr


def test_the_lock_check_ignores_what_the_locks_are_not_made_from(tmp_path: Path) -> None:
    project = _project_copy(tmp_path)
    _edit(project / "pyproject.toml", "line-length = 100", "line-length = 99")
    _edit(project / "pyproject.toml", '"alembic>=1.14,<2",', '"alembic>=1.14,<2",  # migrations')
    assert _lock_check(project).returncode == 0


def test_the_lock_check_fails_on_a_missing_lock_or_one_serve_lock_of_its_own(
    tmp_path: Path,
) -> None:
    project = _project_copy(tmp_path)
    serve = project / "requirements" / "serve.txt"
    pinned = re.search(r"^alembic==(\S+) ", serve.read_text("utf-8"), re.M)
    assert pinned is not None
    _edit(serve, f"alembic=={pinned.group(1)} ", "alembic==0.0.1 ")
    done = _lock_check(project)
    assert done.returncode == 1 and "alembic 0.0.1" in done.stderr
    serve.unlink()
    done = _lock_check(project)
    assert done.returncode == 1 and "requirements/serve.txt is missing" in done.stderr


# -- what is declared --------------------------------------------------------------------------


def _name(requirement: str) -> str:
    found = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert found, requirement
    return re.sub(r"[-_.]+", "-", found.group(0)).lower()


def _with_extras(requirements: list[str]) -> set[str]:
    """The distributions ``requirements`` declare: each one named, and those its extras add
    (``psycopg[pool]`` declares ``psycopg-pool``), read from the installed metadata."""
    names = set()
    for requirement in requirements:
        names.add(_name(requirement))
        extras = re.match(r"[^\[;]*\[([^\]]*)\]", requirement)
        for extra in extras.group(1).split(",") if extras else []:
            for needed in requires(_name(requirement)) or []:
                if re.search(rf"""extra\s*==\s*["']{re.escape(extra.strip())}["']""", needed):
                    names.add(_name(needed))
    return names


def _declared() -> tuple[set[str], set[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    serving = _with_extras(project["dependencies"])
    return serving, serving | _with_extras(project["optional-dependencies"]["dev"])


def _imported(*folders: str) -> dict[str, str]:
    """``{top-level module: a file importing it}`` for absolute imports under ``folders``."""
    found: dict[str, str] = {}
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    found.setdefault(name.split(".")[0], str(path.relative_to(ROOT)))
    return found


def _undeclared(imported: dict[str, str], declared: set[str]) -> list[str]:
    distributions = packages_distributions()
    local = {"yuxi", "tests", "benchmarks"}
    missing = []
    for module, where in sorted(imported.items()):
        if module in sys.stdlib_module_names or module in local:
            continue
        names = {_name(d) for d in distributions.get(module, [])}
        if not names & declared:
            missing.append(f"{module} ({where}; from {sorted(names) or 'nothing installed'})")
    return missing


def test_every_package_the_code_imports_is_a_dependency() -> None:
    serving, _ = _declared()
    assert _undeclared(_imported("src"), serving) == []


def test_every_package_the_tests_and_benchmarks_import_is_declared() -> None:
    _, everything = _declared()
    assert _undeclared(_imported("tests", "benchmarks"), everything) == []


def test_the_declared_check_sees_an_undeclared_import() -> None:
    serving, everything = _declared()
    assert _undeclared({"yaml": "x.py"}, serving) == ["yaml (x.py; from ['pyyaml'])"]
    assert _undeclared({"yaml": "x.py", "json": "x.py", "tests": "x.py"}, everything) == []
    assert _undeclared({"no_such_module_here": "x.py"}, everything) != []
    assert "psycopg-pool" in serving and "greenlet" in serving  # brought by declared extras


def test_the_pytest_plugins_the_options_use_are_declared() -> None:
    options = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["pytest"]
    used = {
        "pytest-benchmark": "--benchmark-disable" in options["ini_options"]["addopts"],
        "pytest-asyncio": "asyncio_mode" in options["ini_options"],
        "pytest-timeout": "timeout" in options["ini_options"],
    }
    _, everything = _declared()
    assert {plugin for plugin, is_used in used.items() if is_used} <= everything
    assert all(used.values())  # each still used: otherwise drop it from this list


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
