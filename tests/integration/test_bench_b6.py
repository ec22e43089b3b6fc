"""B6 at toy scale on the test database: a real ``yuxi serve``, the floor, the idle sampler,
a few open streams, and its report section."""

from __future__ import annotations

from pathlib import Path

from benchmarks import b6_runtime, report
from benchmarks.b6_runtime import run_b6
from benchmarks.env import BenchEnv

from tests.integration.test_bench_smoke import env  # noqa: F401  (the fixture)


async def test_b6_at_toy_scale_and_its_report(env: BenchEnv, tmp_path: Path) -> None:  # noqa: F811
    b6 = await run_b6(
        env, rounds=3, warmup=1, idle_seconds=1.0, stream_levels=(0, 5), settle_seconds=0.5
    )
    stats = b6["stats_ms"]
    assert {name: stats[name]["n"] for name in stats} == dict.fromkeys(stats, 3)
    assert set(stats) == {
        "ours_first",
        "ours_done",
        "ours_wait_done",
        "floor_first",
        "floor_done",
    }
    assert 0 < stats["floor_first"]["p50"] <= stats["floor_done"]["p50"]
    assert stats["ours_first"]["p50"] <= stats["ours_done"]["p50"]
    assert b6["ratios"]["completed ours/floor"]["p50"] > 0
    shape = b6["run_shape"]
    assert shape["token_events"] >= 1 and shape["checkpoints"] >= 1
    assert b6["phases_ms"]["submit_to_claim"]["n"] == 3
    assert set(b6["idle"]) == {"0", "5"}
    assert all(v["transactions"] >= 0 and v["window_s"] >= 1.0 for v in b6["idle"].values())
    # A window in which autovacuum worked here is measured again, a bounded number of times.
    assert all(1 <= v["windows"] <= b6_runtime.IDLE_TRIES for v in b6["idle"].values())
    assert all(v["autovacuum_tables"] >= 0 for v in b6["idle"].values())

    md = report._md_b6(b6)
    assert md[0].startswith("## B6") and any("ours/floor" in line for line in md)
