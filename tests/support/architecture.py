"""Static facts about ``src/yuxi``: its layers, who imports whom, where storage is reached.

Used by ``tests/unit/test_architecture.py`` (the rules) and runnable for a report::

    python -m tests.support.architecture [SRC_DIR]

prints the layer import matrix (row imports column: number of import statements), the modules
that reach storage, and the longest modules.
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "yuxi"
STATIC = SRC / "web" / "static"

#: Bottom to top. A module's layer is its first package under ``yuxi`` (top-level modules are
#: named after their file). Imports may only point to the same layer or a layer listed earlier,
#: except that the composition root (``bootstrap``) and the entry points may import anything.
LAYERS = (
    "base",  # errors, limits, vocabulary, identity, settings, utils, observability
    "db",
    "workspace",
    "repositories",
    "services",
    "agents",
    "runtime",
    "bootstrap",
    "api",
    "cli",
)
BASE_MODULES = {
    "errors",
    "limits",
    "vocabulary",
    "identity",
    "settings",
    "utils",
    "observability",
    "__init__",
}
#: Only these layers may open a database session or write SQL (``db`` owns engine/migrations,
#: ``bootstrap`` builds the engine and the unit-of-work factory and hands them to services).
STORAGE_LAYERS = ("db", "repositories", "services", "bootstrap")
STORAGE_MODULE_PREFIXES = ("sqlalchemy", "psycopg", "yuxi.repositories", "yuxi.db.models")
STORAGE_NAMES = ("session_factory", "async_sessionmaker", "AsyncSession")
MODULE_MAX_LINES = 400


@dataclass
class ModuleFacts:
    path: Path
    name: str
    layer: str
    lines: int
    imports: list[tuple[str, int, bool]] = field(default_factory=list)  # module, line, typing only
    storage_names: list[tuple[str, int]] = field(default_factory=list)


def layer_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) < 2 or parts[0] != "yuxi":
        return "external"
    head = parts[1]
    if head in BASE_MODULES:
        return "base"
    return head if head in LAYERS else "base"


def _module_name(path: Path, src: Path) -> str:
    rel = path.relative_to(src.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _typing_only_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                for sub in ast.walk(child):
                    if hasattr(sub, "lineno"):
                        lines.add(sub.lineno)
    return lines


def scan(src: Path = SRC) -> list[ModuleFacts]:
    facts = []
    for path in sorted(src.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        name = _module_name(path, src)
        text = path.read_text("utf-8")
        tree = ast.parse(text)
        typing_only = _typing_only_lines(tree)
        module = ModuleFacts(path, name, layer_of(name), len(text.splitlines()))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    module.imports.append((alias.name, node.lineno, node.lineno in typing_only))
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(node, name, path.name == "__init__.py")
                for alias in node.names:
                    full = f"{target}.{alias.name}"
                    module.imports.append((full, node.lineno, node.lineno in typing_only))
            elif isinstance(node, ast.Attribute) and node.attr in STORAGE_NAMES:
                module.storage_names.append((node.attr, node.lineno))
            elif isinstance(node, ast.Name) and node.id in STORAGE_NAMES:
                module.storage_names.append((node.id, node.lineno))
        facts.append(module)
    return facts


def layer_matrix(facts: list[ModuleFacts]) -> dict[tuple[str, str], int]:
    counts: Counter[tuple[str, str]] = Counter()
    for module in facts:
        for target, _, _ in module.imports:
            to = layer_of(target)
            if to != "external":
                counts[(module.layer, to)] += 1
    return dict(counts)


def upward_imports(facts: list[ModuleFacts]) -> list[str]:
    """Runtime imports from a lower layer to a higher one (composition root and entry points
    excepted; ``TYPE_CHECKING`` imports are not edges at run time)."""
    bad = []
    for module in facts:
        if module.layer in ("bootstrap", "api", "cli"):
            continue
        for target, line, typing_only in module.imports:
            to = layer_of(target)
            if to == "external" or typing_only:
                continue
            if LAYERS.index(to) > LAYERS.index(module.layer):
                bad.append(f"{module.name}:{line} imports {target} ({module.layer} → {to})")
    return bad


def storage_reached_outside(facts: list[ModuleFacts]) -> list[str]:
    """Places outside services/repositories/db (and the composition root) that touch storage."""
    bad = []
    for module in facts:
        if module.layer in STORAGE_LAYERS:
            continue
        for target, line, typing_only in module.imports:
            if not typing_only and target.startswith(STORAGE_MODULE_PREFIXES):
                bad.append(f"{module.name}:{line} imports {target}")
        for attr, line in module.storage_names:
            bad.append(f"{module.name}:{line} uses {attr}")
    return bad


PROJECT = SRC.parents[1]
#: Where the private-import rule is checked: the package, its tests and its benchmarks.
PRIVATE_IMPORT_ROOTS = ("src", "tests", "benchmarks")


def _is_package(parts: list[str]) -> bool:
    root = PROJECT / "src" if parts[0] == "yuxi" else PROJECT
    return (root.joinpath(*parts) / "__init__.py").is_file()


def owner_of_private(target: str) -> str | None:
    """The package whose private part ``target`` reaches, or ``None`` when it reaches none.

    The first underscore component (dunders aside) is private: a private module belongs to the
    package holding it, a private name to the package of the module defining it."""
    parts = target.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i] if _is_package(parts[:i]) else parts[: i - 1])
    return None


def private_imports_across_packages() -> list[str]:
    """Imports of another package's private module or name, in ``src``, tests and benchmarks.

    A package states its surface in ``__init__`` (``__all__``); what starts with an underscore
    may change without notice, so only its own package may import it."""
    bad = []
    for top in PRIVATE_IMPORT_ROOTS:
        for path in sorted((PROJECT / top).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            rel = path.relative_to(PROJECT / "src" if top == "src" else PROJECT).with_suffix("")
            parts = list(rel.parts)
            is_init = parts[-1] == "__init__"
            module = ".".join(parts[:-1] if is_init else parts)
            package = module if is_init else module.rpartition(".")[0]
            tree = ast.parse(path.read_text("utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    targets = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom):
                    base = _resolve(node, module, is_init)
                    targets = [f"{base}.{alias.name}" for alias in node.names]
                else:
                    continue
                for target in targets:
                    if not target.startswith(("yuxi.", "tests.", "benchmarks.")):
                        continue
                    owner = owner_of_private(target)
                    if owner is not None and owner != package:
                        bad.append(f"{module}:{node.lineno} imports {target}")
    return bad


def long_files(src: Path = SRC, limit: int = MODULE_MAX_LINES) -> list[tuple[str, int]]:
    found = []
    for path in sorted([*src.rglob("*.py"), *(src / "web" / "static").glob("*.js")]):
        if "migrations" in path.parts:
            continue
        lines = len(path.read_text("utf-8").splitlines())
        if lines > limit:
            found.append((str(path.relative_to(src.parent)), lines))
    return found


def _iter_report(src: Path) -> Iterator[str]:
    facts = scan(src)
    matrix = layer_matrix(facts)
    present = [layer for layer in LAYERS if any(m.layer == layer for m in facts)]
    yield "layer import matrix (row imports column; import statements per name):"
    yield "| from \\ to | " + " | ".join(present) + " |"
    yield "|---" * (len(present) + 1) + "|"
    for row in present:
        cells = []
        for col in present:
            n = matrix.get((row, col), 0)
            up = LAYERS.index(col) > LAYERS.index(row) and row not in ("bootstrap", "api", "cli")
            cells.append(("**" + str(n) + "↑**" if up else str(n)) if n else "·")
        yield f"| {row} | " + " | ".join(cells) + " |"
    storage = storage_reached_outside(facts)
    yield f"\nstorage reached outside services/repositories/db/bootstrap: {len(storage)}"
    yield from (f"  {line}" for line in storage)
    upward = upward_imports(facts)
    yield f"\nupward imports at run time: {len(upward)}"
    yield from (f"  {line}" for line in upward)
    private = private_imports_across_packages()
    yield f"\nprivate imports across packages: {len(private)}"
    yield from (f"  {line}" for line in private)
    yield f"\nmodules over {MODULE_MAX_LINES} lines:"
    yield from (f"  {path}: {lines}" for path, lines in long_files(src))


if __name__ == "__main__":
    print("\n".join(_iter_report(Path(sys.argv[1]) if len(sys.argv) > 1 else SRC)))
