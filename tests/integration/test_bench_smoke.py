"""Every benchmark at toy scale on the test database, and the report written from the results."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from benchmarks import report
from benchmarks.b1_write import run_b1
from benchmarks.b2_contention import run_b2
from benchmarks.b3_read import run_b3
from benchmarks.b4_history import run_b4
from benchmarks.b5_context import run_b5
from benchmarks.env import BenchEnv

from yuxi.bootstrap import Container
from yuxi.settings import Settings


@pytest.fixture
async def env(
    database_url: str, container: Container, settings: Settings, tmp_path: Path
) -> AsyncIterator[BenchEnv]:
    bench = BenchEnv(
        server_url=database_url,
        database_url=database_url,
        db_name="test",
        server_kind="test",
        tmp_root=tmp_path,
        data_dir=settings.data_dir,
        container=container,
        info={
            "server_kind": "test",
            "server_version": "?",
            "settings": {},
            "pg_trgm_available": False,
            "workspace_filesystem": "?",
        },
    )
    yield bench
    for engine in bench._engines:
        await engine.dispose()


async def test_all_benchmarks_at_toy_scale_and_report(env: BenchEnv, tmp_path: Path) -> None:
    results = {
        "b1": await run_b1(env, rounds=4, warmup=1),
        "b2": await run_b2(env, writes=2, reps=1, levels=(1, 2)),
        "b3": await run_b3(env, rounds=4, warmup=1),
        "b4": await run_b4(
            env,
            totals=(300, 1200),
            users=5,
            rounds=3,
            warmup=1,
            budget_s=5,
            cold_samples=1,
            progress=False,
        ),
        "b5": await run_b5(env, sizes=(40, 120)),
    }
    b1 = results["b1"]
    # every variant ran without a failure, the diagnostic ones included
    assert {"ours", "floor", "langgraph_store", "naive"} <= b1["failures"].keys()
    assert set(b1["failures"].values()) == {0}
    assert b1["checks"]["floor_bytes_equal_ours"] is True
    assert b1["stats_ms"]["ours"]["n"] == 4 and b1["ratios"]["ours/floor"]["p50"] > 0
    assert b1["diagnostic_ratios"]["diag_ours_again/ours"]["p50"] > 0  # the A/A check ran
    # CPU per call, side by side: the event loop's share is part of all threads' share
    for variant in ("ours", "floor"):
        cpu = b1["cpu_ms"][variant]
        assert 0 < cpu["loop_p50"] <= cpu["process_p50"] + 0.05
    b2 = results["b2"]
    assert b2["lost_updates_total"]["ours/one_uid"] == 0
    assert b2["lost_updates_total"]["ours/distinct_uids"] == 0
    assert b2["series"]["ours/one_uid"]["2"]["writes"] == 4
    assert b2["series"]["ours/one_uid"]["2"]["errors"] == 0
    assert results["b3"]["block_bytes"]["ours_20k_block"] > 20_000
    stage = results["b4"]["stages"][-1]
    assert stage["total_messages"] == 1200 and stage["heavy_messages"] == 120
    kinds = stage["phases"]["ranked"]["kinds"]
    needles = {"shipped": "3 (3 needles)", "custom_plan": "3 (3 needles)"}
    assert kinds["search_rare_en"]["result"] == needles
    assert kinds["search_crowd_cjk3"]["result"] == needles
    # the needles rank first among the common words' hits
    for kind in ("multi_en_4mixed", "multi_cjk_mixed", "phrase_rare_en"):
        assert kinds[kind]["result"]["shipped"].endswith("(3 needles)"), kinds[kind]["result"]
    for kind in ("search_miss_en", "miss_multi"):
        assert kinds[kind]["result"] == {"shipped": 0, "custom_plan": 0}
    for kind in ("multi_en_2common", "multi_en_6common", "multi_mixed_lang", "multi_en_thread"):
        assert kinds[kind]["result"]["shipped"] > 0, kind  # a count, not an error code
    assert isinstance(kinds["multi_en_dates"]["result"]["shipped"], int)
    assert stage["targets"]["heavy_messages_in_window"] > 0
    cold = stage["phases"]["ranked_cold"]
    assert cold["kinds"]["search_rare_cjk4"]["result"] == {"shipped": "3 (3 needles)"}
    if results["b4"]["search_table"]:
        assert stage["search_index"]["build_s"] > 0
        plan = stage["phases"]["ranked"]["plans"]["multi_en_2common"]
        assert "message_search" in " ".join(plan["messages_access"]), plan
        if "fallback_index" in stage:  # the index was GIN (uid, terms): btree_gin is here
            assert stage["phases"]["no_btree_gin"]["kinds"]["search_rare_en"]["result"] == needles
        assert stage["copy_probe"]["rows_per_s"]["with_trigger"] > 0
    assert kinds["read_anchored"]["result"]["shipped"] >= 1
    b5 = results["b5"]["sizes"]
    assert b5[1]["bytes"]["preload_all"] > b5[0]["bytes"]["preload_all"]
    assert b5[1]["bytes"]["ours"] == b5[0]["bytes"]["ours"]  # independent of history size

    doc = {
        "meta": {
            "started_at": "now",
            "mode": "test",
            "argv": [],
            "total_s": 1.0,
            "durations_s": {"B1": 1.0},
            "machine": {"cpus": 2, "platform": "test", "python": "3"},
            "db": env.info,
        },
        "results": results,
        "errors": {},
    }
    out = tmp_path / "out"
    out.mkdir()
    json_path = report.write_json(doc, out)
    md_path = report.write_markdown(doc, out)
    png_path = report.write_chart(results["b2"], out)
    assert json.loads(json_path.read_text())["results"]["b1"]["goal"]["target"] == 1.5
    md = md_path.read_text()
    for section in ("## B1", "## B2", "## B3", "## B4", "## B5", "ours/floor", "event loop ms"):
        assert section in md
    assert png_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
