"""The architecture's rules, checked on the source (see ``tests/support/architecture.py``).

* one way down to storage: no module outside services, repositories, ``db`` and the composition
  root imports SQLAlchemy, psycopg, a repository or the ORM models, or touches a session;
* no import runs upward at run time (the composition root and entry points excepted);
* no module passes ~400 lines (Python and the web UI's JavaScript alike);
* no module (tests and benchmarks included) imports another package's private module or name:
  a package's surface is what its ``__init__`` lists in ``__all__`` and its public modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.architecture import (
    MODULE_MAX_LINES,
    SRC,
    long_files,
    private_imports_across_packages,
    scan,
    storage_reached_outside,
    upward_imports,
)

#: Exception classes are not a way down: the HTTP layer maps "database unreachable" to 503.
_ALLOWED_STORAGE_IMPORTS = ("sqlalchemy.exc.",)


def test_storage_is_reached_only_through_services_and_repositories() -> None:
    found = [
        line
        for line in storage_reached_outside(scan())
        if not any(f" imports {allowed}" in line for allowed in _ALLOWED_STORAGE_IMPORTS)
    ]
    assert found == []


def test_no_sql_text_outside_repositories_and_db() -> None:
    """Raw SQL (``text(...)``, ``select(...)``, ``update(...)``...) is written only in repositories
    and ``db``; services compose repository calls."""
    builders = {"text", "select", "update", "insert", "delete", "func"}
    found = []
    for module in scan():
        if module.layer in ("repositories", "db"):
            continue
        tree = ast.parse(module.path.read_text("utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sqlalchemy"):
                names = {alias.name for alias in node.names} & builders
                if names and not (node.module or "").startswith("sqlalchemy.exc"):
                    found.append(f"{module.name}:{node.lineno} imports {sorted(names)}")
    assert found == []


def test_no_import_runs_upward() -> None:
    assert upward_imports(scan()) == []


def test_no_module_imports_another_packages_private_parts() -> None:
    assert private_imports_across_packages() == []


def test_the_private_import_rule_can_fail(tmp_path: Path) -> None:
    """The rule's scanner sees a private module reached from another package, a private name
    reached through a public module, and lets a package use its own private modules."""
    from tests.support.architecture import owner_of_private

    assert owner_of_private("yuxi.services.memory._writer.LockedMemory") == "yuxi.services.memory"
    assert owner_of_private("yuxi.workspace.locking.try_lock") is None
    assert owner_of_private("yuxi.workspace._paths") == "yuxi.workspace"
    assert owner_of_private("yuxi.agents.middlewares.memory._tools") == "yuxi.agents.middlewares"
    assert owner_of_private("yuxi.services.memory") is None


def test_every_feature_package_states_its_surface() -> None:
    """Each subpackage of the layers declares what it offers in ``__init__``'s ``__all__``."""
    missing = []
    for init in sorted(SRC.rglob("__init__.py")):
        if "migrations" in init.parts or init.parent == SRC:
            continue
        if init.parent.parent.name in ("services", "repositories") and (
            "__all__" not in init.read_text("utf-8")
        ):
            missing.append(str(init.relative_to(SRC)))
    assert missing == []


def test_no_module_is_over_the_size_limit() -> None:
    assert long_files() == [], f"split modules over {MODULE_MAX_LINES} lines"


def test_the_scanner_sees_the_whole_package() -> None:
    """A guard against a rule that cannot fail: the scan covers every layer and finds the
    storage imports that are allowed (repositories do import SQLAlchemy)."""
    facts = scan()
    layers = {m.layer for m in facts}
    assert {"base", "db", "repositories", "services", "agents", "runtime", "api"} <= layers
    repo = next(m for m in facts if m.name == "yuxi.repositories.runs.agent_run_repository")
    assert any(target.startswith("sqlalchemy") for target, _, _ in repo.imports)
    assert Path(SRC / "web" / "static").is_dir()


def test_benchmarks_import_nothing_from_the_tests() -> None:
    """Tests may import the benchmarks (to smoke-test them); the reverse would be a cycle."""
    root = SRC.parents[1] / "benchmarks"
    found = []
    for path in sorted(root.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            found += [f"{path.name}: {n}" for n in names if n == "tests" or n.startswith("tests.")]
    assert found == []
