"""B8's framework floor: the same closed loop as B8, run by a bare LangChain agent with no Yuxi.

``python -m benchmarks.b8_floor --model-url URL --database-url URL --users N --window S --out F``

One process compiles one ``create_agent`` graph — ``ChatOpenAI`` streaming from the scripted
model server (:mod:`benchmarks.model_server`), a ``remember_memory`` tool, LangGraph's Postgres
checkpointer on a psycopg pool — and reuses it for every run, as someone building on the
framework directly would. Each of ``N`` users has its own thread and sends turn after turn, each
as soon as the last one finished, for ``S`` seconds; the turns in flight then finish. A run is
the same two model calls as in B8: the tool call that saves the user's message, then the reply.
The tool appends the message to the user's own ``MEMORY.md`` the safe way (a temp file written
and fsynced, renamed over the old one, the directory fsynced) and keeps nothing in the database.

What this process spends per run is what the framework alone costs: the graph, the model
client, the checkpointer and one file write. Everything Yuxi adds on top is left out — no HTTP
API, no SSE stream of events to a client, no run rows, leases or workers, no stored run events,
no memory gate (the checks and locks that decide whether a write may happen), no memory versions
in the database. Those are Yuxi's guarantees: B8's CPU per run minus this floor is what they,
and the way Yuxi puts the framework together, cost. The users' loop runs in this process too
(it only reads the chunks), where B8's client has a process of its own.

Reported as JSON: completed runs and runs/s, latency from the start of a run to its last chunk,
errors, CPU milliseconds per run of this process, and lost writes (a completed run whose message
is not a line of its user's ``MEMORY.md`` afterwards). :func:`run_floor` runs this module as a
subprocess, so the floor's CPU is its own and never shares a process with a bench harness.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool
from pydantic import SecretStr

from benchmarks.stats import summarize

MODEL_NAME = "b8-scripted"
API_KEY = "sk-b8-not-a-secret"
TOOL_RESULT = "saved"
#: As many connections as Yuxi's own checkpointer pool may open, so neither side is favoured.
POOL_MAX = 8
#: After a failed turn a user waits this long before the next one, so an error cannot spin.
ERROR_PAUSE_S = 0.2
#: How long :func:`run_floor` lets the subprocess run past its window (start-up, the drain).
GRACE_S = 300.0
ERROR_SAMPLES = 5
#: The directory that holds the ``benchmarks`` package: on the subprocess's import path.
REPO_ROOT = Path(__file__).resolve().parents[1]


def _append_line(path: Path, line: str) -> None:
    """Publish ``path`` with ``line`` appended: a reader sees the old file or the new one, never
    a part, and the new one survives a crash once this returns."""
    path.parent.mkdir(parents=True, exist_ok=True)
    old = path.read_bytes() if path.exists() else b""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(old + line.encode("utf-8") + b"\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    # The rename is durable only once the directory that records it is on disk too.
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def make_remember_memory(root: Path) -> BaseTool:
    """The ``remember_memory`` tool, writing under ``root/<user>/MEMORY.md``; the user is the
    run's ``configurable["user"]`` (one writer per user: a user's turns never overlap)."""

    @tool
    async def remember_memory(content: str, config: RunnableConfig) -> str:
        """Save a note to the user's long-term memory."""
        user = str(config.get("configurable", {})["user"])
        # File I/O and fsync block: off the event loop, as any async server must do.
        await asyncio.to_thread(_append_line, root / user / "MEMORY.md", content)
        return TOOL_RESULT

    return remember_memory


def build_agent(model_url: str, checkpointer: AsyncPostgresSaver, root: Path) -> Any:
    """The one compiled graph every run of the process uses."""
    model = ChatOpenAI(
        model=MODEL_NAME, base_url=model_url, api_key=SecretStr(API_KEY), streaming=True
    )
    return create_agent(model=model, tools=[make_remember_memory(root)], checkpointer=checkpointer)


async def run_turn(agent: Any, user: str, thread: str, marker: str) -> None:
    """One run to its end, every chunk consumed; raises unless the tool saved and a reply came
    (a run that stops short is an error, not a completed run)."""
    config: RunnableConfig = {"configurable": {"thread_id": thread, "user": user}}
    saved = replied = False
    async for mode, chunk in agent.astream(
        {"messages": [HumanMessage(marker)]}, config, stream_mode=["updates", "messages"]
    ):
        if mode != "updates" or not isinstance(chunk, dict):
            continue
        for update in chunk.values():
            if not isinstance(update, dict):
                continue
            for message in update.get("messages", ()):
                if isinstance(message, ToolMessage):
                    saved = saved or message.content == TOOL_RESULT
                elif isinstance(message, AIMessage) and message.content and not message.tool_calls:
                    replied = True
    if not (saved and replied):
        raise RuntimeError(f"run ended short (tool saved: {saved}, replied: {replied})")


@dataclass
class _Tally:
    latencies_ms: list[float] = field(default_factory=list)
    completed: list[tuple[str, str]] = field(default_factory=list)  # (user, marker)
    in_window: int = 0
    errors: list[str] = field(default_factory=list)


async def _user(agent: Any, user: str, stop_at: float, tally: _Tally) -> None:
    thread = str(uuid.uuid4())
    n = 0
    while time.perf_counter() < stop_at:
        marker = f"b8 floor {user} turn {n}"
        n += 1
        t0 = time.perf_counter()
        try:
            await run_turn(agent, user, thread, marker)
        except Exception as exc:  # counted; the user goes on
            tally.errors.append(f"{type(exc).__name__}: {exc}"[:200])
            await asyncio.sleep(ERROR_PAUSE_S)
            continue
        t1 = time.perf_counter()
        tally.latencies_ms.append((t1 - t0) * 1000)
        tally.completed.append((user, marker))
        tally.in_window += int(t1 <= stop_at)


def _lost_writes(root: Path, completed: list[tuple[str, str]]) -> int:
    """Completed runs whose marker is not a whole line of their user's file (a line, not a
    substring: "turn 1" is inside "turn 10")."""
    lines: dict[str, set[str]] = {}
    lost = 0
    for user, marker in completed:
        if user not in lines:
            path = root / user / "MEMORY.md"
            lines[user] = set(path.read_text("utf-8").splitlines()) if path.exists() else set()
        lost += int(marker not in lines[user])
    return lost


def _versions() -> dict[str, str]:
    out: dict[str, str] = {}
    for dist in (
        "langchain",
        "langchain-core",
        "langchain-openai",
        "langgraph",
        "langgraph-checkpoint-postgres",
    ):
        with contextlib.suppress(metadata.PackageNotFoundError):
            out[dist] = metadata.version(dist)
    return out


async def floor(
    *, model_url: str, database_url: str, users: int, window_s: float, root: Path
) -> dict[str, Any]:
    """The closed loop in this process; memory files go under ``root``."""
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        database_url,
        min_size=1,
        max_size=POOL_MAX,
        open=False,
        # What the checkpointer requires of its connections (it says so in its docs).
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
    )
    await pool.open(wait=True, timeout=30)
    tally = _Tally()
    try:
        # The saver keeps its library default, one asyncio lock around each database call:
        # that is what a framework user gets.
        saver = AsyncPostgresSaver(pool)
        await saver.setup()
        agent = build_agent(model_url, saver, root)
        # One run outside the measure: the first pays once for what every later run reuses
        # (lazy imports, the model client's connection, the pool's connection).
        await run_turn(agent, "warmup", str(uuid.uuid4()), "b8 floor warmup")
        print(f"b8 floor: running, {users} users for {window_s:g} s", flush=True)
        cpu0 = time.process_time()
        start = time.perf_counter()
        stop_at = start + window_s
        await asyncio.gather(*(_user(agent, f"u{i}", stop_at, tally) for i in range(users)))
        end = time.perf_counter()
        # Every thread of the process counts (the tool's file writes run on worker threads).
        cpu_s = time.process_time() - cpu0
    finally:
        await pool.close()
    lost = await asyncio.to_thread(_lost_writes, root, tally.completed)
    completed = len(tally.completed)
    elapsed = end - start
    return {
        "users": users,
        "window_s": window_s,
        "drain_s": max(0.0, end - stop_at),
        "completed": completed,
        "completed_in_window": tally.in_window,
        # every turn started in the window, over the window and its drain: what was sustained
        "runs_per_s": completed / elapsed,
        "runs_per_s_window": tally.in_window / window_s,
        "latency_ms": summarize(tally.latencies_ms),
        "errors": len(tally.errors),
        "error_samples": sorted(set(tally.errors))[:ERROR_SAMPLES],
        "cpu_s": cpu_s,
        "cpu_ms_per_run": cpu_s * 1000 / completed if completed else None,
        "lost_writes": lost,
        "versions": _versions(),
    }


async def run_floor(
    database_url: str, model_url: str, users: int, window_s: float, log: Path
) -> dict[str, Any]:
    """Run the floor in a subprocess of its own (output to ``log``, its JSON beside it) and
    return that JSON. ``model_url`` is the model server's OpenAI base, ``http://host:port/v1``."""
    out = log.with_suffix(".json") if log.suffix != ".json" else log.with_suffix(".out.json")
    env = {k: v for k, v in os.environ.items() if not k.startswith("YUXI_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    argv = [
        sys.executable,
        "-m",
        "benchmarks.b8_floor",
        "--model-url",
        model_url,
        "--database-url",
        database_url,
        "--users",
        str(users),
        "--window",
        str(window_s),
        "--out",
        str(out),
    ]

    def spawn() -> subprocess.Popen[bytes]:
        with log.open("wb") as sink:
            return subprocess.Popen(argv, env=env, stdout=sink, stderr=subprocess.STDOUT)

    proc = await asyncio.to_thread(spawn)
    try:
        code = await asyncio.to_thread(proc.wait, window_s + GRACE_S)
    finally:
        if proc.poll() is None:  # timed out or cancelled: it must not outlive the caller
            proc.kill()
            await asyncio.to_thread(proc.wait)
    if code != 0:
        tail = (await asyncio.to_thread(log.read_text, errors="replace"))[-3000:]
        raise RuntimeError(f"b8 floor exited with {code}:\n{tail}")
    result: dict[str, Any] = json.loads(await asyncio.to_thread(out.read_text, "utf-8"))
    return result


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.b8_floor", description=__doc__)
    p.add_argument("--model-url", required=True, help="OpenAI base URL, http://host:port/v1")
    p.add_argument("--database-url", required=True, help="PostgreSQL URL for the checkpointer")
    p.add_argument("--users", type=int, required=True)
    p.add_argument("--window", type=float, required=True, help="seconds of new turns")
    p.add_argument("--out", type=Path, required=True, help="where to write the JSON result")
    args = p.parse_args(argv)
    # Under the system temp directory, as B8's Yuxi workspace is: the same filesystem's fsync.
    root = Path(tempfile.mkdtemp(prefix="b8-floor-"))
    try:
        result = asyncio.run(
            floor(
                model_url=args.model_url,
                database_url=args.database_url,
                users=args.users,
                window_s=args.window,
                root=root,
            )
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", "utf-8")
    lat = result["latency_ms"]
    print(
        f"b8 floor {result['users']} users: {result['runs_per_s']:.1f} runs/s, "
        f"p50 {lat['p50']:.0f} ms, p95 {lat['p95']:.0f} ms, "
        f"cpu {result['cpu_ms_per_run'] or float('nan'):.1f} ms/run, "
        f"errors {result['errors']}, lost {result['lost_writes']}",
        flush=True,
    )


if __name__ == "__main__":
    main()
