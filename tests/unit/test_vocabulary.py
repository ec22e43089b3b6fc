"""The web UI's copy of the run status sets matches the one Python definition."""

from __future__ import annotations

import re

from tests.support.architecture import STATIC
from yuxi.vocabulary import (
    ACTIVE_RUN_STATUSES,
    MEMORY_LINT_CODES,
    MEMORY_VERSION_ACTORS,
    MEMORY_VERSION_KINDS,
    RUN_STATUSES,
    SETTLED_RUN_STATUSES,
)
from yuxi.workspace.filesystem import MEMORY_PATH


def _js_set(source: str, name: str) -> set[str]:
    found = re.search(rf"export const {name} = new Set\(\[([^\]]*)\]\)", source)
    assert found is not None, f"{name} not found in vocabulary.js"
    return set(re.findall(r"'([a-z_]+)'", found.group(1)))


def test_ui_run_status_sets_match_the_server() -> None:
    source = (STATIC / "vocabulary.js").read_text("utf-8")
    assert _js_set(source, "SETTLED") == set(SETTLED_RUN_STATUSES)
    assert _js_set(source, "ACTIVE") == set(ACTIVE_RUN_STATUSES)
    assert set(SETTLED_RUN_STATUSES) | set(ACTIVE_RUN_STATUSES) == set(RUN_STATUSES)
    assert f"'{MEMORY_PATH}'" in source


def test_no_other_ui_module_defines_run_statuses() -> None:
    for path in STATIC.glob("*.js"):
        if path.name == "vocabulary.js":
            continue
        text = path.read_text("utf-8")
        assert "'completed', 'failed'" not in text, path.name
        assert "'pending', 'running'" not in text, path.name


def _js_keys(source: str, name: str) -> set[str]:
    found = re.search(rf"export const {name} = \{{([^}}]*)\}}", source)
    assert found is not None, f"{name} not found in vocabulary.js"
    return set(re.findall(r"^\s*([a-z_]+):", found.group(1), re.MULTILINE))


def test_ui_labels_cover_exactly_the_memory_version_and_lint_sets() -> None:
    source = (STATIC / "vocabulary.js").read_text("utf-8")
    assert _js_keys(source, "MEMORY_VERSION_ACTOR_TEXT") == set(MEMORY_VERSION_ACTORS)
    assert _js_keys(source, "MEMORY_VERSION_KIND_TEXT") == set(MEMORY_VERSION_KINDS)
    assert _js_keys(source, "MEMORY_LINT_TEXT") == set(MEMORY_LINT_CODES)
