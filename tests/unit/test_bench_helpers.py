"""Helpers of the benchmark suite: percentiles, ratios, schedules, text, file helpers, B8's CPU
sampler."""

from __future__ import annotations

import math
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from benchmarks.b4_history import parse_scale
from benchmarks.b8_processes import CpuSampler
from benchmarks.datagen import CJK_WORDS, EN_WORDS, TERMS, message_text
from benchmarks.fixtures import count_entries, durable_publish, naive_append, realistic_memory
from benchmarks.stats import percentile, ratio, round_order, summarize


def test_percentile_matches_linear_interpolation() -> None:
    samples = [15.0, 20.0, 35.0, 40.0, 50.0]
    assert percentile(samples, 0) == 15.0
    assert percentile(samples, 100) == 50.0
    assert percentile(samples, 50) == 35.0
    assert percentile(samples, 40) == pytest.approx(29.0)  # rank 1.6 between 20 and 35
    assert percentile(list(range(1, 101)), 99) == pytest.approx(99.01)
    assert percentile([7.0], 95) == 7.0
    assert math.isnan(percentile([], 50))
    with pytest.raises(ValueError):
        percentile([1.0], 101)


def test_percentile_ignores_input_order() -> None:
    rng = random.Random(3)
    samples = [rng.random() for _ in range(501)]
    shuffled = samples[:]
    rng.shuffle(shuffled)
    for p in (50, 95, 99):
        assert percentile(samples, p) == percentile(shuffled, p)
    assert percentile(samples, 50) == sorted(samples)[250]


def test_summary_and_ratio() -> None:
    a = summarize([2.0] * 10)
    b = summarize([1.0] * 10)
    assert a["n"] == 10 and a["p50"] == 2.0 and a["mean"] == 2.0
    assert ratio(a, b) == {"p50": 2.0, "p95": 2.0, "p99": 2.0}
    assert math.isnan(ratio(a, summarize([]))["p50"])


def test_round_order_gives_every_variant_every_neighbour() -> None:
    items = ["a", "b", "c", "d"]
    orders = [round_order(items, k) for k in range(200)]
    assert all(sorted(order) == items for order in orders)
    assert orders == [round_order(items, k) for k in range(200)]  # the same in every run
    # No fixed neighbour (what a rotation has): each variant runs right after each other one.
    after = {(order[i], order[i + 1]) for order in orders for i in range(len(order) - 1)}
    assert after == {(x, y) for x in items for y in items if x != y}
    firsts = {order[0] for order in orders}
    assert firsts == set(items)
    assert round_order([], 5) == []


def test_count_entries() -> None:
    text = "x\n\n- a\n- b\n- b\n"
    assert count_entries(text, ["- a", "- b", "- c"]) == {
        "present_once": 1,
        "missing": 1,
        "duplicated": 1,
    }


def test_realistic_memory_size_and_text() -> None:
    text = realistic_memory(20 * 1024)
    size = len(text.encode("utf-8"))
    assert 19 * 1024 < size <= 20 * 1024
    assert any("\u4e00" <= ch <= "\u9fff" for ch in text)
    assert realistic_memory(2048) == realistic_memory(2048)


def test_durable_publish_and_naive_append(tmp_path: Path) -> None:
    target = tmp_path / "MEMORY.md"
    durable_publish(target, b"first\n")
    assert target.read_bytes() == b"first\n"
    naive_append(target, "second")
    assert target.read_text() == "first\n\nsecond\n"
    durable_publish(target, "新内容\n".encode())
    assert target.read_text() == "新内容\n"
    assert [p.name for p in tmp_path.iterdir()] == ["MEMORY.md"]  # no temp left behind


def test_search_terms_are_sound() -> None:
    vocabulary = "".join(CJK_WORDS) + " ".join(EN_WORDS)
    for key in ("miss_en", "miss_cjk", "rare_en", "rare_cjk"):
        for ch in TERMS[key]:
            if "\u4e00" <= ch <= "\u9fff":
                assert ch not in vocabulary, (key, ch)
    assert TERMS["miss_en"].split()[0] not in EN_WORDS
    assert TERMS["common_en"] in EN_WORDS and TERMS["common_cjk"] in CJK_WORDS
    assert len(TERMS["miss_cjk"]) == 2 and len(TERMS["common_cjk"]) == 2


def test_message_text_is_deterministic_and_mixed() -> None:
    a = [message_text(random.Random(9)) for _ in range(3)]
    b = [message_text(random.Random(9)) for _ in range(3)]
    assert a == b
    rng = random.Random(1)
    texts = [message_text(rng) for _ in range(400)]
    assert any(any("\u4e00" <= ch <= "\u9fff" for ch in t) for t in texts)
    assert any(t.isascii() for t in texts)
    assert max(len(t.encode()) for t in texts) > 1500  # some long ones


def test_parse_scale() -> None:
    assert parse_scale("quick") == (10_000, 100_000)
    assert parse_scale("full") == (10_000, 100_000, 1_000_000)
    assert parse_scale("2000,500") == (500, 2000)
    with pytest.raises(ValueError):
        parse_scale("10")


def test_a_process_trees_cpu_counts_children_that_ended_in_the_window() -> None:
    """B8's database CPU is its postmaster's tree: a backend that ends in the window (a pool
    closing a connection) still counts, through its parent's total of ended children."""
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import subprocess, sys, time\ntime.sleep(0.5)\n"
            f"subprocess.run([sys.executable, '-c', {burn!r}])\ntime.sleep(5)",
        ]
    )
    try:
        sampler = CpuSampler(tree_roles={"tree": parent.pid})
        started = time.perf_counter()
        sampler.begin()
        spent, ended = 0.0, False
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (ended and spent >= 0.25):
            time.sleep(0.1)
            spent = sampler.end()["tree"] / 100 * (time.perf_counter() - started)
            ended = spent > 0.1 and not _children(parent.pid)  # burnt, ended, waited for
        assert ended and spent >= 0.25, (ended, spent)
    finally:
        parent.kill()
        parent.wait()


def _children(pid: int) -> list[str]:
    return [
        entry.name
        for entry in Path("/proc").iterdir()
        if entry.name.isdigit()
        and (entry / "stat").exists()
        and (entry / "stat").read_text().rsplit(")", 1)[-1].split()[1] == str(pid)
    ]
