"""B3 — per-run overhead of the memory read side.

What every new chatbot run pays before its first model call when memory is on: the UserConfig
query, the ≤ 24 KiB bounded read of MEMORY.md (symlink-safe, off the event loop) and the block
render (``render_memory_block``). Variants, interleaved:

* ``ours_20k`` — a realistic 20 KiB MEMORY.md; ``ours_empty`` — an empty one (the rules are
  still rendered, tools stay registered); ``ours_off`` — memory switched off (the query only,
  no file opened);
* ``floor_20k`` — one plain ``SELECT enable_memory`` on the same engine + one plain
  ``open``/``read`` of the same 20 KiB in a worker thread + decode: the least this can cost.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from sqlalchemy import text

from benchmarks._runner import interleave
from benchmarks.env import BenchEnv
from benchmarks.fixtures import make_user, realistic_memory
from benchmarks.stats import ratio, summarize
from yuxi.agents.middlewares.memory import render_memory_block
from yuxi.utils.prompt_framing import new_nonce
from yuxi.workspace.filesystem import MEMORY_PATH

MEMORY_BYTES = 20 * 1024
READ_CAP = 24 * 1024


def _plain_read(path: Path) -> str:
    with open(path, "rb") as f:
        return f.read(READ_CAP).decode("utf-8")


async def run_b3(env: BenchEnv, *, rounds: int, warmup: int) -> dict[str, Any]:
    c = env.container
    memory = c.services.memory
    full_uid = await make_user(c, name="b3-20k")
    empty_uid = await make_user(c, name="b3-empty")
    off_uid = await make_user(c, memory=False, name="b3-off")
    ws = c.workspace(full_uid)
    content = realistic_memory(MEMORY_BYTES, seed=3).encode("utf-8")
    await ws.replace_file(MEMORY_PATH, content)
    full_path = ws.directory / MEMORY_PATH
    sizes: dict[str, int] = {}
    query = text("SELECT enable_memory FROM user_config WHERE uid = :uid")

    async def ours_20k(_: int) -> None:
        snapshot = await memory.load_memory_snapshot(full_uid)
        assert snapshot is not None
        sizes["ours_20k_block"] = len(
            render_memory_block(snapshot.text, nonce=new_nonce()).encode("utf-8")
        )

    async def ours_empty(_: int) -> None:
        snapshot = await memory.load_memory_snapshot(empty_uid)
        assert snapshot is not None
        sizes["ours_empty_block"] = len(
            render_memory_block(snapshot.text, nonce=new_nonce()).encode("utf-8")
        )

    async def ours_off(_: int) -> None:
        snapshot = await memory.load_memory_snapshot(off_uid)
        assert snapshot is None

    async def floor_20k(_: int) -> None:
        async with c.session_factory() as session:
            enabled = (await session.execute(query, {"uid": full_uid})).scalar_one()
        assert enabled
        sizes["floor_20k_text"] = len((await asyncio.to_thread(_plain_read, full_path)).encode())

    ops = {
        "ours_20k": ours_20k,
        "ours_empty": ours_empty,
        "ours_off": ours_off,
        "floor_20k": floor_20k,
    }
    run = await interleave(ops, rounds=rounds, warmup=warmup)
    stats = {name: summarize(samples) for name, samples in run.samples_ms.items()}
    return {
        "rounds": run.rounds,
        "memory_file_bytes": len(content),
        "block_bytes": sizes,
        "stats_ms": stats,
        "ratios": {
            "ours_20k/floor_20k": ratio(stats["ours_20k"], stats["floor_20k"]),
            "ours_empty/floor_20k": ratio(stats["ours_empty"], stats["floor_20k"]),
            "ours_20k/ours_empty": ratio(stats["ours_20k"], stats["ours_empty"]),
            "ours_off/floor_20k": ratio(stats["ours_off"], stats["floor_20k"]),
        },
        "samples_ms": {k: [round(v, 4) for v in vs] for k, vs in run.samples_ms.items()},
        "wall_s": run.wall_s,
    }
