"""The install locks: ``serve.txt`` (what ``make run`` and the image install) and ``dev.txt``
(that plus the dev extras, for ``make test`` and ``make check``). Both pin every package,
``setuptools`` and ``wheel`` included (the project itself is then installed with ``--no-deps
--no-build-isolation``), to one version with its hashes, for every Python that
``requires-python`` allows (3.11 and 3.12): markers pick a version per Python where one does not
fit both.

Each lock's first lines record a digest of the tables of ``pyproject.toml`` it was made from
(``requires-python``, the dependencies, the optional dependencies, the build requirements), so
``check`` can tell a stale lock without the network or any tool: only the standard library is
used here, and the first ``make run`` runs ``check`` before it installs anything.

    python requirements/lock.py check                  # exit 1 and say why when stale
    python requirements/lock.py refresh --uv PATH      # make both locks anew (``make lock``)

``refresh`` keeps each pinned version that still satisfies ``pyproject.toml`` (the old lock is
the resolver's preference); ``--upgrade`` moves every package to the newest version allowed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCKS = {"serve": "requirements/serve.txt", "dev": "requirements/dev.txt"}
DIGEST_LINE = "# pyproject-sha256: "
HEADER = """\
# Yuxi's {name} lock: exact versions with their hashes, for Python 3.11 and 3.12.
# Made by `make lock` (requirements/lock.py) from pyproject.toml; do not edit by hand.
# Installed with: pip install --require-hashes -r {path}
# then the project itself with --no-deps --no-build-isolation.
{digest_line}{digest}
"""


class LockError(Exception):
    """A lock that cannot be used as it is, with what to do about it."""


def dependency_digest(pyproject: Path) -> str:
    """The SHA-256 of what a lock is made from, in a canonical form: reordering keys or
    reformatting the file keeps it, changing any requirement changes it."""
    data = tomllib.loads(pyproject.read_text("utf-8"))
    project = data["project"]
    tables = {
        "build-system.requires": data["build-system"]["requires"],
        "project.requires-python": project["requires-python"],
        "project.dependencies": project["dependencies"],
        "project.optional-dependencies": project.get("optional-dependencies", {}),
    }
    canonical = json.dumps(tables, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def recorded_digest(lock: Path) -> str | None:
    """The digest in a lock's header, or None when the lock has none."""
    for line in lock.read_text("utf-8").splitlines():
        if line.startswith(DIGEST_LINE):
            return line.removeprefix(DIGEST_LINE).strip()
        if not line.startswith("#"):
            break
    return None


_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^ ;\\]+)")


def pins(lock: Path) -> dict[str, set[str]]:
    """``{normalised name: versions}`` pinned in a lock file (more than one version where
    markers choose one per Python)."""
    found: dict[str, set[str]] = {}
    for line in lock.read_text("utf-8").splitlines():
        match = _PIN.match(line)
        if match:
            name = re.sub(r"[-_.]+", "-", match.group(1)).lower()
            found.setdefault(name, set()).add(match.group(2))
    return found


def check(root: Path = ROOT) -> None:
    """Raise :class:`LockError` unless both locks exist, were made from ``root``'s
    ``pyproject.toml`` as it is now, and pin every package they share to the same version."""
    expected = dependency_digest(root / "pyproject.toml")
    for relative in LOCKS.values():
        if not (root / relative).is_file():
            raise LockError(f"{relative} is missing: run `make lock`")
    stale = [rel for rel in LOCKS.values() if recorded_digest(root / rel) != expected]
    if stale:
        raise LockError(
            f"{' and '.join(stale)} no longer match pyproject.toml's dependencies:"
            " run `make lock`, and commit the locks with pyproject.toml"
        )
    serve, dev = (pins(root / LOCKS[name]) for name in ("serve", "dev"))
    differ = sorted(
        f"{name} {'/'.join(sorted(versions))}"
        for name, versions in serve.items()
        if not versions <= dev.get(name, set())
    )
    if differ:
        raise LockError(
            "the serve lock pins what the dev lock does not (" + ", ".join(differ) + "):"
            " run `make lock`"
        )


def _compile(uv: str, root: Path, out: Path, *args: str, upgrade: bool) -> str:
    """One ``uv pip compile`` of pyproject.toml plus its build requirements into ``out`` (which
    holds the old lock, if any, as the preferred versions); the lock's text without a header."""
    data = tomllib.loads((root / "pyproject.toml").read_text("utf-8"))
    floor = re.search(r">=\s*(\d+\.\d+)", data["project"]["requires-python"])
    if floor is None:
        raise LockError("requires-python has no lower bound (>=3.x) to resolve for")
    command = [
        uv, "pip", "compile", "pyproject.toml", "-",
        "--universal", "--python-version", floor.group(1),
        "--generate-hashes", "--no-header", "--quiet",
        "--output-file", str(out),
        *(["--upgrade"] if upgrade else []),
        *args,
    ]  # fmt: skip
    build = "".join(f"{requirement}\n" for requirement in data["build-system"]["requires"])
    subprocess.run(command, cwd=root, input=build, text=True, check=True)
    return out.read_text("utf-8")


def refresh(uv: str, root: Path = ROOT, *, upgrade: bool = False) -> None:
    """Make both locks anew from ``root``'s pyproject.toml: the dev lock first (its old pins
    preferred), then the serve lock constrained to the new dev lock's pins (which leaves it
    nothing to choose), so that the tests run the versions that are served."""
    digest = dependency_digest(root / "pyproject.toml")
    for name in ("dev", "serve"):
        options = ["--extra", "dev"] if name == "dev" else ["--constraint", LOCKS["dev"]]
        with tempfile.TemporaryDirectory() as scratch:
            out = Path(scratch) / "lock.txt"
            if name == "dev" and (root / LOCKS[name]).is_file():
                shutil.copyfile(root / LOCKS[name], out)
            body = _compile(uv, root, out, *options, upgrade=upgrade)
        header = HEADER.format(name=name, path=LOCKS[name], digest_line=DIGEST_LINE, digest=digest)
        (root / LOCKS[name]).write_text(header + body, "utf-8")
    check(root)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the project (pyproject.toml)")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("check", help="exit 1 when a lock no longer matches pyproject.toml")
    make = commands.add_parser("refresh", help="make both locks anew with uv")
    make.add_argument("--uv", required=True, help="the uv executable")
    make.add_argument("--upgrade", action="store_true", help="newest allowed versions")
    args = parser.parse_args(argv)
    try:
        if args.command == "check":
            check(args.root)
        else:
            refresh(args.uv, args.root, upgrade=args.upgrade)
    except LockError as exc:
        print(f"lock: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
