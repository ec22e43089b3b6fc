"""Interleaving of variants, each round in a new order, so machine noise and what ran just
before hit every variant alike."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from benchmarks.stats import round_order

Op = Callable[[int], Awaitable[object]]


@dataclass
class Interleaved:
    """Raw latencies (ms) per variant, in the order they were taken, and the CPU time this
    process spent during each call (ms): ``loop_cpu_ms`` on the event loop's thread (Python and
    the system calls it makes), ``process_cpu_ms`` on all its threads (the worker threads'
    file I/O too). Neither counts the database server's CPU."""

    samples_ms: dict[str, list[float]] = field(default_factory=dict)
    loop_cpu_ms: dict[str, list[float]] = field(default_factory=dict)
    process_cpu_ms: dict[str, list[float]] = field(default_factory=dict)
    rounds: int = 0
    retired: dict[str, int] = field(default_factory=dict)  # variant -> round it stopped at
    wall_s: float = 0.0


async def interleave(
    ops: Mapping[str, Op],
    *,
    rounds: int,
    warmup: int = 0,
    before_round: Callable[[int], Awaitable[None]] | None = None,
    budget_s: float | None = None,
    min_samples: int = 5,
) -> Interleaved:
    """Run every op once per round, in a new order each round (:func:`round_order`); time
    each call.

    ``before_round(r)`` runs untimed before round ``r`` (resets). The first ``warmup`` rounds
    are not recorded. With ``budget_s``, a variant whose recorded time exceeds it is retired
    once it has ``min_samples`` samples (slow variants stop early; fast ones keep sampling).
    """
    names = list(ops)
    result = Interleaved(
        samples_ms={n: [] for n in names},
        loop_cpu_ms={n: [] for n in names},
        process_cpu_ms={n: [] for n in names},
    )
    spent = dict.fromkeys(names, 0.0)
    active = list(names)
    started = time.perf_counter()
    for r in range(warmup + rounds):
        if not active:
            break
        if before_round is not None:
            await before_round(r)
        for name in round_order(active, r):
            c0, p0 = time.thread_time_ns(), time.process_time_ns()
            t0 = time.perf_counter_ns()
            await ops[name](r)
            dt_ms = (time.perf_counter_ns() - t0) / 1e6
            c1, p1 = time.thread_time_ns(), time.process_time_ns()
            if r >= warmup:
                result.samples_ms[name].append(dt_ms)
                result.loop_cpu_ms[name].append((c1 - c0) / 1e6)
                result.process_cpu_ms[name].append((p1 - p0) / 1e6)
                spent[name] += dt_ms / 1000
        if r >= warmup:
            result.rounds += 1
        if budget_s is not None:
            for name in list(active):
                if spent[name] > budget_s and len(result.samples_ms[name]) >= min_samples:
                    active.remove(name)
                    result.retired[name] = r
    result.wall_s = time.perf_counter() - started
    return result
