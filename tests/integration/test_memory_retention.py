"""Retention on real PostgreSQL, against the rule written out in Python.

The record statement finds what to prune from each version's running numbers (``seq``,
``cum_bytes``) instead of summing the newest sizes: these tests hold it to the rule itself —
keep the newest ``MEMORY_VERSIONS_KEEP``, then drop the oldest while the kept sizes sum to more
than ``MEMORY_VERSIONS_MAX_BYTES``, never the newest — over random writes, deletes, repairs of
edits made outside Yuxi and limits changed between writes, and at the byte boundary."""

from __future__ import annotations

import itertools
import random

import pytest
from sqlalchemy import text

from tests.support.factories import make_user, memory_file
from yuxi import limits
from yuxi.bootstrap import Container


def _retained(sizes: list[int], keep: int, max_bytes: int) -> list[int]:
    """The rule, oldest first: ``sizes[-1]`` is the version just recorded."""
    kept = sizes[-max(keep, 1) :]
    while len(kept) > 1 and sum(kept) > max_bytes:
        kept = kept[1:]
    return kept


async def _rows(container: Container, uid: str) -> list[tuple[int, int, int]]:
    """(size, seq, cum_bytes) of the user's retained versions, oldest first."""
    async with container.session_factory() as session:
        rows = await session.execute(
            text("SELECT size, seq, cum_bytes FROM memory_versions WHERE uid = :uid ORDER BY id"),
            {"uid": uid},
        )
        return [(int(a), int(b), int(c)) for a, b, c in rows]


def _numbered_in_order(rows: list[tuple[int, int, int]]) -> bool:
    """Consecutive ``seq`` and ``cum_bytes`` growing by each size: the run the rule reads."""
    return all(
        seq == prev_seq + 1 and cum == prev_cum + size
        for (_, prev_seq, prev_cum), (size, seq, cum) in itertools.pairwise(rows)
    )


async def test_retention_follows_the_rule_over_random_writes(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(20261204)
    uid = await make_user(container, memory=False)
    memory = container.services.memory
    model: list[int] = []  # sizes of the retained versions, oldest first
    for step in range(60):
        keep, max_bytes = rng.choice([1, 2, 3, 5, 8]), rng.choice([0, 40, 120, 300, 10_000])
        monkeypatch.setattr(limits, "MEMORY_VERSIONS_KEEP", keep)
        monkeypatch.setattr(limits, "MEMORY_VERSIONS_MAX_BYTES", max_bytes)
        action = rng.random()
        if action < 0.1 and model:
            await memory.delete_memory_file(uid)
            model = _retained([*model, 0], keep, max_bytes)
            continue
        if action < 0.2:
            # Edited outside Yuxi: the next write first records the file as `recovered`
            # (inserted as it is, not pruned), then records its own change and prunes.
            outside = ("外" * rng.randint(0, 30) + f"{step}\n").encode()
            memory_file(container, uid).parent.mkdir(parents=True, exist_ok=True)
            memory_file(container, uid).write_bytes(outside)
            model.append(len(outside))
        data = ("记" * rng.randint(0, 40) + "x" * rng.randint(0, 40) + f" {step}\n").encode()
        await memory.write_memory_file(uid, data)
        model = _retained([*model, len(data)], keep, max_bytes)
        rows = await _rows(container, uid)
        assert [size for size, _, _ in rows] == model, f"step {step}: keep {keep}, max {max_bytes}"
        assert _numbered_in_order(rows)


async def test_the_kept_bytes_may_reach_the_limit_but_not_pass_it(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MEMORY_VERSIONS_MAX_BYTES", 90)
    uid = await make_user(container, memory=False)
    memory = container.services.memory
    for n in range(3):
        await memory.write_memory_file(uid, ("记" * 9 + f"{n}" * 2 + "\n").encode())  # 30 bytes
    assert [size for size, _, _ in await _rows(container, uid)] == [30, 30, 30]  # 90: kept
    await memory.write_memory_file(uid, ("记" * 9 + "33\n").encode())  # 30 more: 120 > 90
    assert [size for size, _, _ in await _rows(container, uid)] == [30, 30, 30]
    await memory.write_memory_file(uid, ("记" * 9 + "444\n").encode())  # 31: 30 + 30 + 31 = 91
    assert [size for size, _, _ in await _rows(container, uid)] == [30, 31]
    rows = await _rows(container, uid)
    assert _numbered_in_order(rows) and rows[-1][1] == 5  # the fifth version the user made
