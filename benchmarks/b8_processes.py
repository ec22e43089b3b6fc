"""B8's processes: the scripted model server, ``yuxi serve`` and ``yuxi worker`` as subprocesses,
and the CPU each spent (read from ``/proc``: Linux), the database server's backends included."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Proc:
    """One subprocess; ``health_url`` (if any) answers 200 once it is ready, else ``ready_line``
    appears in its log."""

    role: str
    argv: list[str]
    env: dict[str, str]
    log: Path
    health_url: str | None = None
    ready_line: str | None = None
    proc: subprocess.Popen[bytes] | None = None

    async def start(self, wait_s: float = 120.0) -> None:
        def spawn() -> subprocess.Popen[bytes]:
            with self.log.open("wb") as out:
                return subprocess.Popen(
                    self.argv, env=self.env, stdout=out, stderr=subprocess.STDOUT
                )

        self.proc = await asyncio.to_thread(spawn)
        deadline = time.monotonic() + wait_s
        async with httpx.AsyncClient() as client:
            while True:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"{self.role} exited:\n{self.log.read_text()[-3000:]}")
                if self.health_url is not None:
                    with contextlib.suppress(httpx.HTTPError):
                        if (await client.get(self.health_url, timeout=1)).status_code == 200:
                            return
                elif self.ready_line and self.ready_line in self.log.read_text(errors="replace"):
                    return
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"{self.role} did not start:\n{self.log.read_text()[-3000:]}"
                    )
                await asyncio.sleep(0.2)

    async def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            await asyncio.to_thread(self.proc.wait, 30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            await asyncio.to_thread(self.proc.wait, 10)

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid


def yuxi_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "yuxi.cli", *args]


def model_server(port: int, delay: float, log: Path) -> Proc:
    env = {k: v for k, v in os.environ.items() if not k.startswith("YUXI_")}
    return Proc(
        "model",
        [
            sys.executable,
            "-m",
            "benchmarks.model_server",
            "--port",
            str(port),
            "--delay",
            str(delay),
        ],
        env,
        log,
        health_url=f"http://127.0.0.1:{port}/healthz",
    )


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat(pid: int) -> tuple[int, float, float] | None:
    """(parent pid, user+system CPU seconds, the same of its children that ended and were
    waited for) of ``pid`` from /proc, None when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2 :].split()  # after "pid (comm) "
    own = (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime
    ended = (int(fields[13]) + int(fields[14])) / _TICK  # cutime, cstime
    return int(fields[1]), own, ended


def _cpu(pid: int) -> float | None:
    stat = _stat(pid)
    return None if stat is None else stat[1]


#: The key of a tree's ended children in :func:`_tree_cpu` (no process has pid 0).
_ENDED = 0


def _tree_cpu(pid: int) -> dict[int, float]:
    """CPU seconds of ``pid``, of each of its live children (one level: a postmaster's
    backends) and, under :data:`_ENDED`, of its children that ended (the kernel adds a child's
    CPU to its parent's ``cutime``/``cstime`` when the parent waits for it, as a postmaster
    does for every backend)."""
    out: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        stat = _stat(int(entry.name))
        if stat is None:
            continue
        if int(entry.name) == pid:
            out[pid] = stat[1]
            out[_ENDED] = stat[2]
        elif stat[0] == pid:
            out[int(entry.name)] = stat[1]
    return out


def _machine() -> tuple[float, float]:
    """(all, idle + iowait) CPU ticks of the machine since boot, from /proc/stat."""
    try:
        first = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return 0.0, 0.0
    ticks = [float(x) for x in first]
    return sum(ticks[:8]), ticks[3] + ticks[4]


@dataclass
class CpuSampler:
    """CPU seconds per role between :meth:`begin` and :meth:`end`: the bench's processes by
    pid, the database server as its postmaster's whole tree — its backends come and go: one
    that started in the window counts from zero, one that ended in it counts through its
    parent's total of ended children. (Before the ninth stop of issue 35 an ended backend was
    not counted: a pool that closed and opened connections under load looked cheaper on the
    database's side than it was.)"""

    roles: dict[str, list[int]] = field(default_factory=dict)
    tree_roles: dict[str, int] = field(default_factory=dict)
    _before: dict[str, dict[int, float]] = field(default_factory=dict)
    _t0: float = 0.0
    _sys0: Any = None

    def _sample(self) -> dict[str, dict[int, float]]:
        sample: dict[str, dict[int, float]] = {}
        for role, pids in self.roles.items():
            sample[role] = {}
            for pid in pids:
                spent = _cpu(pid)
                if spent is not None:
                    sample[role][pid] = spent
        for role, pid in self.tree_roles.items():
            sample[role] = _tree_cpu(pid)
        return sample

    def begin(self) -> None:
        self._before = self._sample()
        self._t0 = time.perf_counter()
        self._sys0 = _machine()

    def end(self) -> dict[str, float]:
        """Per role: CPU used as a percentage of one core over the window; ``machine_busy``:
        of the whole machine (every process, other people's too)."""
        after = self._sample()
        window = max(1e-9, time.perf_counter() - self._t0)
        out: dict[str, float] = {}
        for role, now in after.items():
            before = self._before.get(role, {})
            if role in self.tree_roles:
                # Live and ended alike: a backend that ended is in the total of ended
                # children, its whole life long; what it had spent by the start is taken off.
                spent = sum(now.values()) - sum(before.values())
            else:
                spent = sum(v - before.get(pid, 0.0) for pid, v in now.items())
            out[role] = round(100.0 * spent / window, 1)
        total, idle = _machine()
        if self._sys0 is not None and total > self._sys0[0]:
            spent_all, spent_idle = total - self._sys0[0], idle - self._sys0[1]
            out["machine_busy_pct"] = round(100.0 * (spent_all - spent_idle) / spent_all, 1)
        return out


def postmaster_pid(database_url: str) -> int | None:
    """The database server's postmaster (the parent of a backend), when it runs here."""
    try:
        with psycopg.connect(database_url) as conn:
            row = conn.execute("SELECT pg_backend_pid()").fetchone()
            # read while the backend lives: it exits as soon as the connection closes
            stat = None if row is None else _stat(int(row[0]))
    except psycopg.Error:
        return None
    return None if stat is None else stat[0]
