"""R4 load: many concurrent users run chat turns over HTTP against a real ``yuxi serve``.

Each user turns memory on, then runs turns alternately on two threads with the offline model:
mostly ``remember: <a fact only this user has>``, every fourth turn ``what do you remember?``
(the reply must quote every fact confirmed so far). Counted: every HTTP status (0 5xx allowed),
every run's final status (all ``completed``), and each user's MEMORY.md at the end (all its facts,
each exactly once, nothing else: 0 lost writes). Run latency — client-observed for
``POST …/runs?wait=true`` and server-side ``finished_at - created_at`` — p50/p95/p99 go to the
summary and to ``artifacts/reliability/r4.json``.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections import Counter
from datetime import datetime
from typing import Any

import httpx
import pytest

from tests.reliability.support import TIMEOUT, mode, percentile, report, scale, write_artifact
from tests.support.server import LiveServer, create_user_with_token
from yuxi.bootstrap import Container

pytestmark = [pytest.mark.pg, pytest.mark.slow, TIMEOUT]

MEMORY = "/api/v1/workspace/files/agents/MEMORY.md"
RECALL_EVERY = 4


class Tally:
    def __init__(self) -> None:
        self.http: Counter[int] = Counter()
        self.runs: Counter[str] = Counter()
        self.client_latency: list[float] = []
        self.server_latency: list[float] = []
        self.errors: list[str] = []

    def seen(self, resp: httpx.Response, what: str) -> httpx.Response:
        self.http[resp.status_code] += 1
        if resp.status_code >= 500:
            self.errors.append(f"{what} -> {resp.status_code}: {resp.text[:200]}")
        return resp


def _seconds(run: dict[str, Any]) -> float | None:
    if not run.get("created_at") or not run.get("finished_at"):
        return None
    created = datetime.fromisoformat(run["created_at"])
    return (datetime.fromisoformat(run["finished_at"]) - created).total_seconds()


async def _user(server: LiveServer, token: str, number: int, runs: int, tally: Tally) -> list[str]:
    """One user's whole session; returns the facts it was told were remembered."""
    facts: list[str] = []
    async with server.client(token, timeout=300) as c:
        resp = tally.seen(await c.put("/api/v1/me/config", json={"enable_memory": True}), "cfg")
        assert resp.status_code == 200, resp.text
        threads = []
        for _ in range(2):
            resp = tally.seen(await c.post("/api/v1/threads", json={}), "thread")
            assert resp.status_code == 201, resp.text
            threads.append(resp.json()["thread_id"])
        for k in range(runs):
            recall = k % RECALL_EVERY == RECALL_EVERY - 1
            fact = f"r4 user{number} fact{k} {uuid.uuid4().hex[:12]}"
            text = "what do you remember?" if recall else f"remember: {fact}"
            started = time.perf_counter()
            resp = tally.seen(
                await c.post(
                    f"/api/v1/threads/{threads[k % 2]}/runs?wait=true",
                    json={"input": text, "request_id": f"r4-{number}-{k}"},
                ),
                "run",
            )
            tally.client_latency.append(time.perf_counter() - started)
            if resp.status_code != 200:
                tally.errors.append(f"user{number} run {k}: {resp.status_code} {resp.text[:200]}")
                continue
            run = resp.json()
            tally.runs[run["status"]] += 1
            if (seconds := _seconds(run)) is not None:
                tally.server_latency.append(seconds)
            reply = str((run.get("output") or {}).get("reply", ""))
            if run["status"] != "completed":
                tally.errors.append(f"user{number} run {k}: {run['status']} {run.get('error')}")
            elif recall:
                missing = [f for f in facts if f not in reply]
                if missing:
                    tally.errors.append(f"user{number} recall {k} misses {missing[:2]}")
            elif reply == f"Saved to memory: «{fact}»":
                facts.append(fact)
            else:
                tally.errors.append(f"user{number} remember {k} not updated: {reply[:200]}")
        resp = tally.seen(await c.get(MEMORY), "memory")
        assert resp.status_code == 200, resp.text
        lines = [line for line in resp.text.splitlines() if line]
        if sorted(lines) != sorted(facts) or len(set(lines)) != len(lines):
            tally.errors.append(f"user{number}: MEMORY.md {len(lines)} lines, {len(facts)} facts")
    return facts


async def test_concurrent_users_over_http(live_server: LiveServer, container: Container) -> None:
    users = scale(10, 50)
    runs = scale(4, 20)
    tokens = [(await create_user_with_token(container, f"r4-{n}"))[1] for n in range(users)]
    tally = Tally()
    started = time.perf_counter()
    remembered = await asyncio.gather(
        *(_user(live_server, token, n, runs, tally) for n, token in enumerate(tokens))
    )
    elapsed = time.perf_counter() - started

    log = live_server.log_path.read_text(errors="replace")
    tracebacks = log.count("Traceback (most recent call last)")
    server_5xx = sum(n for code, n in tally.http.items() if code >= 500)
    total_runs = sum(tally.runs.values())
    facts = sum(len(f) for f in remembered)
    ms = {
        "client_p50_ms": round(percentile(tally.client_latency, 50) * 1000, 1),
        "client_p95_ms": round(percentile(tally.client_latency, 95) * 1000, 1),
        "client_p99_ms": round(percentile(tally.client_latency, 99) * 1000, 1),
        "server_p50_ms": round(percentile(tally.server_latency, 50) * 1000, 1),
        "server_p95_ms": round(percentile(tally.server_latency, 95) * 1000, 1),
        "server_p99_ms": round(percentile(tally.server_latency, 99) * 1000, 1),
    }
    write_artifact(
        "r4.json",
        {
            "mode": mode(),
            "users": users,
            "runs_per_user": runs,
            "runs": total_runs,
            "run_statuses": dict(tally.runs),
            "http_statuses": {str(k): v for k, v in sorted(tally.http.items())},
            "server_5xx": server_5xx,
            "server_tracebacks": tracebacks,
            "facts_remembered": facts,
            "lost_memory_writes": len([e for e in tally.errors if "MEMORY.md" in e]),
            "seconds": round(elapsed, 2),
            "runs_per_second": round(total_runs / elapsed, 2),
            "server_workers": int(os.environ.get("YUXI_TEST_SERVER_WORKERS", "4")),
            **ms,
            "errors": tally.errors[:50],
        },
    )
    report(
        "R4 load",
        users=users,
        runs=total_runs,
        http_requests=sum(tally.http.values()),
        server_5xx=server_5xx,
        facts=facts,
        lost_writes=len([e for e in tally.errors if "MEMORY.md" in e]),
        seconds=round(elapsed, 1),
        **ms,
    )
    assert tally.errors == []
    assert server_5xx == 0
    assert tracebacks == 0, log[-4000:]
    assert total_runs == users * runs and tally.runs["completed"] == total_runs
    assert facts == users * (runs - runs // RECALL_EVERY)
