"""Several processes sharing only PostgreSQL and the data directory: two ``yuxi serve`` (no
in-process workers) and two ``yuxi worker`` processes, as they would run on several hosts.

PostgreSQL is reached the way the other tiers reach it: over TCP when
``YUXI_TEST_DATABASE_URL`` names the machine's server; without it (CI) the embedded server
listens on a Unix socket only, so every process uses that socket URL — the processes then share
one host, which changes nothing for the code under test (each process has its own connections
and its own LISTEN session either way).

* every run submitted through either API process is executed once, by some worker process, and
  an event stream on one API process follows a run that a worker process executes;
* killed mid-stream and mid-run (SIGKILL, one API process and the worker holding the run): the
  stream resumes with ``Last-Event-ID`` on the other API process with nothing missed or
  repeated, the orphaned run is failed once by the surviving worker (``worker_lease_expired``;
  never claimed again), and the runs queued behind it are each executed exactly once.
"""

from __future__ import annotations

import asyncio
import functools
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from sqlalchemy import text

from tests.support.server import free_port
from tests.support.sse import iter_events
from tests.support.waiting import until
from yuxi.bootstrap import Container

pytestmark = pytest.mark.timeout(300)

LEASE_SECONDS = 3
GIVE_UP_SECONDS = 60.0
LOCK_SQL = "SELECT pg_advisory_xact_lock(hashtextextended('user-memory:' || %s, 0))"


@dataclass
class Proc:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path
    base_url: str = ""

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


def _env(container: Container, **extra: str) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("YUXI_")},
        "YUXI_DATABASE_URL": container.database_url,
        "YUXI_DATA_DIR": str(container.settings.data_dir),
        "YUXI_LEASE_SECONDS": str(LEASE_SECONDS),
        "YUXI_HEARTBEAT_SECONDS": "1",
        "YUXI_POLL_SECONDS": "1",
        **extra,
    }


def _spawn(name: str, args: list[str], env: dict[str, str], tmp: Path) -> Proc:
    log = tmp / f"{name}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "yuxi.cli", *args], env=env, stdout=out, stderr=subprocess.STDOUT
        )
    return Proc(name, proc, log)


async def _wait(what: str, check: Any) -> None:
    await until(what, check, within=GIVE_UP_SECONDS)


async def start_api(container: Container, tmp: Path, name: str) -> Proc:
    port = free_port()
    env = _env(container, YUXI_HOST="127.0.0.1", YUXI_PORT=str(port), YUXI_WORKERS="0")
    api = _spawn(name, ["serve"], env, tmp)
    api.base_url = f"http://127.0.0.1:{port}"

    async def up() -> bool:
        if api.proc.poll() is not None:
            pytest.fail(f"{name} exited early:\n{api.text()[-3000:]}")
        try:
            async with httpx.AsyncClient() as c:
                return (await c.get(api.base_url + "/healthz", timeout=1)).status_code == 200
        except httpx.HTTPError:
            return False

    await _wait(f"{name} to serve", up)
    return api


async def start_worker(container: Container, tmp: Path, name: str, **extra: str) -> Proc:
    worker = _spawn(name, ["worker", "--count", "1"], _env(container, **extra), tmp)

    def up() -> bool:
        if worker.proc.poll() is not None:
            pytest.fail(f"{name} exited early:\n{worker.text()[-3000:]}")
        return "worker(s) running" in worker.text()

    await _wait(f"{name} to start", up)
    return worker


@contextmanager
def processes() -> Iterator[list[Proc]]:
    started: list[Proc] = []
    try:
        yield started
    finally:
        for p in started:
            p.stop()


async def _user(container: Container, *, memory: bool = False) -> tuple[str, str]:
    users = container.services.users
    issued = await users.create_user(f"mp-{os.urandom(3).hex()}")
    if memory:
        await users.set_memory_enabled(issued.uid, True)
    return issued.uid, issued.token


def _client(base_url: str, token: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=base_url,
        headers={"Authorization": f"Bearer {token}"},
        timeout=httpx.Timeout(30.0, read=None),
    )


async def _follow(client: httpx.AsyncClient, run_id: str, after: int = 0) -> list[dict[str, Any]]:
    headers = {"Accept": "text/event-stream", "Last-Event-ID": str(after)}
    async with client.stream("GET", f"/api/v1/runs/{run_id}/events", headers=headers) as resp:
        assert resp.status_code == 200
        return [e async for e in iter_events(resp)]


async def _submit(client: httpx.AsyncClient, text_in: str) -> str:
    thread = (await client.post("/api/v1/threads", json={})).json()["thread_id"]
    resp = await client.post(f"/api/v1/threads/{thread}/runs", json={"input": text_in})
    assert resp.status_code == 202, resp.text
    return str(resp.json()["run_id"])


async def _record(container: Container, run_id: str) -> tuple[str, int, list[str]]:
    """(status, attempt, statuses of its run_status events in order)."""
    async with container.session_factory() as s:
        status, attempt = (
            await s.execute(
                text("SELECT status, attempt FROM agent_runs WHERE id = :id"), {"id": run_id}
            )
        ).one()
        events = await s.execute(
            text(
                "SELECT data->>'status' FROM run_events WHERE run_id = :id "
                "AND event_type = 'run_status' ORDER BY seq"
            ),
            {"id": run_id},
        )
        return str(status), int(attempt), [str(e) for e in events.scalars()]


async def test_two_api_and_two_worker_processes_share_the_runs(
    container: Container, tmp_path: Path
) -> None:
    with processes() as procs:
        procs += await asyncio.gather(
            start_api(container, tmp_path, "api-a"),
            start_api(container, tmp_path, "api-b"),
            start_worker(container, tmp_path, "worker-1"),
            start_worker(container, tmp_path, "worker-2"),
        )
        api_a, api_b = procs[0], procs[1]
        _, token = await _user(container)
        async with _client(api_a.base_url, token) as a, _client(api_b.base_url, token) as b:
            run_ids = [await _submit(a if i % 2 else b, f"hello {i}") for i in range(6)]
            # a stream on each API process, each following a run a worker process executes
            for client, run_id in ((a, run_ids[0]), (b, run_ids[1])):
                followed = await asyncio.wait_for(_follow(client, run_id), GIVE_UP_SECONDS)
                assert [e["seq"] for e in followed] == list(range(1, len(followed) + 1))
                assert followed[-1]["data"] == {"status": "completed"}
            for run_id in run_ids:
                await _wait("the run to complete", functools.partial(_completed, container, run_id))
                assert await _record(container, run_id) == (
                    "completed",
                    1,
                    ["pending", "running", "completed"],
                )


async def _completed(container: Container, run_id: str) -> bool:
    return (await _record(container, run_id))[0] == "completed"


async def test_killing_an_api_process_and_a_worker_mid_run_loses_and_doubles_nothing(
    container: Container, tmp_path: Path
) -> None:
    uid, token = await _user(container, memory=True)
    with processes() as procs:
        procs += await asyncio.gather(
            start_api(container, tmp_path, "api-a"),
            start_api(container, tmp_path, "api-b"),
            # one run at a time: its only run is the held one, so the queued runs are worker-2's
            start_worker(container, tmp_path, "worker-1", YUXI_WORKER_CONCURRENCY="1"),
        )
        api_a, api_b, worker_1 = procs
        # Hold the user's memory lock: the run blocks inside remember_memory, mid-run, while
        # its worker keeps the lease alive with heartbeats.
        lock = await psycopg.AsyncConnection.connect(container.database_url)
        try:
            await lock.execute(LOCK_SQL, (uid,))
            async with _client(api_a.base_url, token) as a, _client(api_b.base_url, token) as b:
                held = await _submit(a, "remember: the ferry leaves at nine")
                seen: list[dict[str, Any]] = []

                async def follow_a() -> None:
                    headers = {"Accept": "text/event-stream"}
                    async with a.stream(
                        "GET", f"/api/v1/runs/{held}/events", headers=headers
                    ) as resp:
                        async for event in iter_events(resp):
                            seen.append(event)

                stream = asyncio.create_task(follow_a())
                await _wait("the held run's tool call", lambda: _tool_started(seen))
                procs.append(await start_worker(container, tmp_path, "worker-2"))
                queued = [await _submit(b, f"after {i}") for i in range(3)]
                api_a.kill()  # mid-stream
                worker_1.kill()  # mid-run, holding the lease
                with pytest.raises(httpx.HTTPError):
                    await asyncio.wait_for(stream, GIVE_UP_SECONDS)
                await lock.rollback()  # nobody is waiting on it any more
                rest = await asyncio.wait_for(
                    _follow(b, held, after=seen[-1]["seq"]), GIVE_UP_SECONDS
                )
                whole = seen + rest
                assert [e["seq"] for e in whole] == list(range(1, len(whole) + 1))
                assert whole[-1]["type"] == "run_status"
                assert whole[-1]["data"]["status"] == "failed"
                assert whole[-1]["data"]["error"]["code"] == "worker_lease_expired"
                assert await _record(container, held) == (
                    "failed",
                    1,
                    ["pending", "running", "failed"],
                )
                for run_id in queued:
                    await _wait("a queued run", functools.partial(_completed, container, run_id))
                    assert await _record(container, run_id) == (
                        "completed",
                        1,
                        ["pending", "running", "completed"],
                    )
        finally:
            await lock.close()


def _tool_started(events: list[dict[str, Any]]) -> bool:
    return any(e["type"] == "tool_start" for e in events)
