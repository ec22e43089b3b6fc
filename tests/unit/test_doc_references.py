"""Every file path, module and ``§`` section that the docs and the code's own words name exists.

Scanned: ``docs/*.md`` and ``README.md`` whole; the comments and docstrings of every Python file
under ``src/``, ``tests/`` and ``benchmarks/``. Recognised:

* paths from the repository root (``src/…``, ``tests/…``, ``benchmarks/…``, ``docs/…``), files
  or folders; package-relative ``.py`` paths (``db/engine.py`` means a file under
  ``src/yuxi/``); a markdown link's target, from the linking document's folder; a bare file name
  (``design.md``, ``engine.py``): some file of the repository has it (a user's workspace files
  aside);
* dotted names rooted at ``yuxi``, ``benchmarks`` or ``tests``: the longest prefix that is a
  module must exist, and the next name, if any, must be defined at its top level;
* ``§N`` / ``§N.M``: a numbered heading of ``docs/design.md``, or of the ``.md`` file named just
  before it (``<doc>.md §N``); after ``issue N`` or ``RFC N`` it is somebody else's section.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "yuxi"
DOTTED_ROOTS = {"yuxi": PACKAGE, "benchmarks": ROOT / "benchmarks", "tests": ROOT / "tests"}
#: Files of a user's workspace, not of this repository.
WORKSPACE_FILES = {"MEMORY.md", "AGENTS.md", "USER.md"}
#: Kept exactly as written: its paths are those of the project it was decided for.
ARCHIVED = {ROOT / "docs" / "memory-decision.zh.md"}

_NOT_BEFORE = r"(?<![\w./`-])"
ROOTED = re.compile(_NOT_BEFORE + r"(?:src|tests|benchmarks|docs)/[\w./-]*[\w/]")
RELATIVE_PY = re.compile(
    _NOT_BEFORE + r"(?!(?:src|tests|benchmarks|docs)/)(?:[a-z_]\w*/)+\w+\.py\b"
)
BARE_FILE = re.compile(
    _NOT_BEFORE + r"(?<!\]\()[\w-]+(?:\.[\w-]+)*\.(?:py|md|toml|yaml|yml|json)(?![\w/])"
)
MD_LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
DOTTED = re.compile(_NOT_BEFORE + r"(?:yuxi|benchmarks|tests)(?:\.[A-Za-z_]\w*)+(?![\w-])")
SECTION = re.compile(r"§\s?(\d+(?:\.\d+)*[a-z]?)")
FOREIGN_SECTION = re.compile(r"(?:issue|RFC|PEP)\s*#?\d+\s*$", re.IGNORECASE)
NAMED_DOC = re.compile(r"([\w.-]+\.md)\W{0,3}$")
HEADING = re.compile(r"^#+\s+(\d+(?:\.\d+)*[a-z]?)\.?\s", re.MULTILINE)


@cache
def repo_files() -> tuple[Path, ...]:
    """The files at the root and under the scanned folders (no caches, no hidden files)."""
    found = [path for path in ROOT.iterdir() if path.is_file()]
    for top in ("src", "tests", "benchmarks", "docs"):
        found += [
            path
            for path in (ROOT / top).rglob("*")
            if path.is_file() and "__pycache__" not in path.parts and not path.name.startswith(".")
        ]
    return tuple(found)


def texts() -> Iterator[tuple[Path, str]]:
    """(file, text to scan): a document whole, a Python file's comments and docstrings."""
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        if doc not in ARCHIVED:
            yield doc, doc.read_text(encoding="utf-8")
    for path in repo_files():
        if path.suffix == ".py" and path.relative_to(ROOT).parts[0] in ("src", *DOTTED_ROOTS):
            yield path, python_words(path.read_text(encoding="utf-8"))


def python_words(source: str) -> str:
    """The comments and docstrings of one Python source, one per line."""
    words = [
        tok.string
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            words.append(ast.get_docstring(node, clean=False) or "")
    return "\n".join(words)


@cache
def top_level_names(module: Path) -> frozenset[str]:
    names: set[str] = set()
    for node in ast.parse(module.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return frozenset(names)


def module_exists(dotted: str) -> bool:
    root, *parts = dotted.split(".")
    base = DOTTED_ROOTS[root]
    for i in range(len(parts), -1, -1):
        stem = base.joinpath(*parts[:i])
        module = stem / "__init__.py" if stem.is_dir() else stem.with_suffix(".py")
        if not module.is_file() or (i == 0 and parts):
            continue
        rest = parts[i:]
        return not rest or rest[0] in top_level_names(module) or (module.parent / rest[0]).is_dir()
    return False


def section_exists(doc: Path, number: str) -> bool:
    return doc.is_file() and number in HEADING.findall(doc.read_text(encoding="utf-8"))


def broken_references(path: Path, text: str) -> Iterator[str]:
    """Every reference in ``text`` (the words of ``path``) that names nothing."""
    basenames = {p.name for p in repo_files()}
    for line in text.splitlines():
        where = f"{path.relative_to(ROOT)}: {line.strip()[:100]}"
        for match in ROOTED.finditer(line):
            if not (ROOT / match.group().rstrip(".")).exists():
                yield f"{where}\n    no such path: {match.group()}"
        for match in RELATIVE_PY.finditer(line):
            if not any((base / match.group()).is_file() for base in (ROOT, PACKAGE, path.parent)):
                yield f"{where}\n    no such module file: {match.group()}"
        for match in BARE_FILE.finditer(line):
            if match.group() not in basenames | WORKSPACE_FILES:
                yield f"{where}\n    no file here is named {match.group()}"
        if path.suffix == ".md":
            for target in MD_LINK.findall(line):
                if "://" not in target and not (path.parent / target).exists():
                    yield f"{where}\n    broken link: {target}"
        for match in DOTTED.finditer(line):
            if not module_exists(match.group()):
                yield f"{where}\n    no such module or name: {match.group()}"
        for match in SECTION.finditer(line):
            before = line[: match.start()]
            if FOREIGN_SECTION.search(before):
                continue
            named = NAMED_DOC.search(before)
            doc = ROOT / "docs" / (named.group(1) if named else "design.md")
            if named and named.group(1) == "README.md":
                doc = ROOT / "README.md"
            if not section_exists(doc, match.group(1)):
                yield f"{where}\n    no section {match.group(1)} in {doc.relative_to(ROOT)}"


def test_every_named_path_module_and_section_exists() -> None:
    broken = [problem for path, text in texts() for problem in broken_references(path, text)]
    assert not broken, f"{len(broken)} broken references:\n" + "\n".join(broken)


def test_the_scanner_reports_what_does_not_exist() -> None:
    here = ROOT / "docs" / "design.md"
    text = (
        "see src/yuxi/nowhere.py, services/gone.py, missing_module.py, [x](nope.md),\n"
        "yuxi.services.no_such_module, yuxi.errors.NoSuchError, design.md §99.9, deploy.md §42\n"
        "fine: src/yuxi/errors.py, errors.py, yuxi.errors.YuxiError, §5.3, issue 10 §99,\n"
        "[d](design.md), agents/MEMORY.md, db/engine.py, yuxi.limits"
    )
    problems = "\n".join(broken_references(here, text))
    for name in (
        "src/yuxi/nowhere.py",
        "services/gone.py",
        "missing_module.py",
        "nope.md",
        "yuxi.services.no_such_module",
        "yuxi.errors.NoSuchError",
        "no section 99.9 in docs/design.md",
        "no section 42 in docs/deploy.md",
    ):
        assert name in problems, name
    assert len(list(broken_references(here, text))) == 8, problems
