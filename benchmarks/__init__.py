"""Benchmarks of the memory path (``python -m benchmarks``; ``make bench``).

B1 write path vs. the physical floor, LangGraph's store and a naive file edit; B2 contention
across OS processes with lost updates counted; B3 per-run read overhead; B4 history search/read
at scale on a generated database; B5 model-input bytes vs. preloading all history.

Every comparison runs in the same process run on the same PostgreSQL, variants interleaved
(each round in a new seeded order: ``_stats.round_order``), and is reported as ratios of
p50/p95/p99 computed from the raw samples.
"""
