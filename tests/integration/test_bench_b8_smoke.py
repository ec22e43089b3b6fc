"""B8 (capacity with a slow model) at toy scale on the test database, so it cannot rot: real
``yuxi serve`` and ``yuxi worker`` processes against the scripted model server, two users for a
moment, and the report section written from the result. Nothing here is timed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from benchmarks import report
from benchmarks.b8_capacity import run_b8
from benchmarks.env import BenchEnv
from benchmarks.model_server import REPLY, answer

from yuxi.bootstrap import Container
from yuxi.settings import Settings


@pytest.fixture
async def env(
    database_url: str, container: Container, settings: Settings, tmp_path: Path
) -> AsyncIterator[BenchEnv]:
    yield BenchEnv(
        server_url=database_url,
        database_url=database_url,
        db_name="test",
        server_kind="test",
        tmp_root=tmp_path,
        data_dir=settings.data_dir,
        container=container,
        info={"server_kind": "test", "server_version": "?", "settings": {}},
    )


def test_the_model_server_asks_to_remember_the_user_turn_then_replies() -> None:
    call = answer([{"role": "system", "content": "s"}, {"role": "user", "content": "记住 b8"}])
    assert call["tool_calls"][0]["name"] == "remember_memory"
    assert '"记住 b8"' in call["tool_calls"][0]["arguments"]
    tool = {"role": "tool", "tool_call_id": "c", "content": "ok"}
    assert answer([{"role": "user", "content": "x"}, tool]) == {"content": REPLY, "tool_calls": []}


async def test_b8_at_toy_scale_in_one_serve_and_split_processes(
    env: BenchEnv, tmp_path: Path
) -> None:
    b8 = await run_b8(
        env, levels=(2,), window_s=1.0, model_delay_s=0.05, configs=("defaults", "split")
    )
    for name in ("defaults", "split"):
        row = b8["configs"][name]["levels"]["2"]
        assert row["errors"] == 0, row["error_samples"]
        assert row["lost_memory_writes"] == 0
        assert row["turns"] >= 2 and row["latency_ms"]["n"] == row["turns"]
        assert row["executing_ms"]["n"] == row["turns"]  # every completed run was found
    assert b8["checks"]["no_errors"] and b8["checks"]["no_lost_writes"]
    floor = b8["floor"]["levels"]["2"]
    assert floor["errors"] == 0 and floor["lost_writes"] == 0 and floor["completed"] >= 2
    # The floor runs before the configurations too, so a drift in between shows.
    first = b8["floor"]["before"]["2"]
    assert first["errors"] == 0 and first["lost_writes"] == 0 and first["completed"] >= 2
    assert b8["checks"]["floor_no_errors"]
    doc = {
        "meta": {
            "started_at": "now",
            "mode": "test",
            "argv": [],
            "total_s": 1.0,
            "durations_s": {"B8": 1.0},
            "machine": {"cpus": 2, "platform": "test", "python": "3"},
            "db": {**env.info, "pg_trgm_available": False, "workspace_filesystem": "?"},
        },
        "results": {"b8": b8},
        "errors": {},
    }
    out = tmp_path / "out"
    out.mkdir()
    md = report.write_markdown(doc, out).read_text()
    assert "## B8" in md and "**split**" in md and "**floor**" in md
    assert f"| {first['cpu_ms_per_run']:,.1f} / {floor['cpu_ms_per_run']:,.1f} |" in md
