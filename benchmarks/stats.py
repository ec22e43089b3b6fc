"""Percentiles and ratios computed from raw samples (no numpy: the arithmetic is the point)."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

PERCENTILES = (50, 95, 99)


def percentile(samples: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (0..100) by linear interpolation between closest ranks.

    Same definition as numpy's default ("linear"): rank ``(n - 1) * p / 100`` in the sorted
    samples, interpolated between its floor and ceiling.
    """
    if not samples:
        return math.nan
    if not 0 <= p <= 100:
        raise ValueError(f"percentile must be within 0..100, got {p}")
    ordered = sorted(samples)
    rank = (len(ordered) - 1) * p / 100
    low = math.floor(rank)
    high = math.ceil(rank)
    if low == high:
        return float(ordered[low])
    frac = rank - low
    return float(ordered[low] + (ordered[high] - ordered[low]) * frac)


def summarize(samples_ms: Sequence[float]) -> dict[str, Any]:
    """n, mean, min, max and p50/p95/p99 of latencies in milliseconds."""
    n = len(samples_ms)
    out: dict[str, Any] = {"n": n}
    if n == 0:
        out.update({"mean": math.nan, "min": math.nan, "max": math.nan})
        out.update({f"p{p}": math.nan for p in PERCENTILES})
        return out
    out["mean"] = sum(samples_ms) / n
    out["min"] = float(min(samples_ms))
    out["max"] = float(max(samples_ms))
    for p in PERCENTILES:
        out[f"p{p}"] = percentile(samples_ms, p)
    return out


def ratio(num: dict[str, Any], den: dict[str, Any]) -> dict[str, float]:
    """Percentile-wise ratio ``num / den`` of two summaries (p50, p95, p99)."""
    result: dict[str, float] = {}
    for p in PERCENTILES:
        key = f"p{p}"
        a, b = num.get(key, math.nan), den.get(key, math.nan)
        result[key] = a / b if b and not math.isnan(b) and not math.isnan(a) else math.nan
    return result


def ns_to_ms(values: Sequence[int]) -> list[float]:
    return [v / 1e6 for v in values]


def round_order(items: Sequence[Any], k: int) -> list[Any]:
    """The order of round ``k``: ``items`` shuffled by a generator seeded with ``k`` (the same
    order for the same round in every run).

    Why not a round-robin rotation: a rotation keeps every variant's neighbour fixed (in
    ``a, b, c`` rotated, ``b`` always runs right after ``a``), and what ran just before a call
    changes its time — CPU caches, the interpreter's warmth for that code path, the disk's
    and the server's leftover work. An A/A check measured it: two identical ``remember_memory``
    variants differed by 5% at p50 under rotation and by 0–1% shuffled (issue 14's notes).
    """
    order = list(items)
    random.Random(k).shuffle(order)
    return order
