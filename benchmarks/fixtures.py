"""Users, threads and claimed runs for the benchmarks (the same rows the app creates)."""

from __future__ import annotations

import os
import random
import uuid
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path

from sqlalchemy import update

from benchmarks.datagen import CJK_WORDS, EN_WORDS
from yuxi.bootstrap import Container
from yuxi.db.models import AgentRun
from yuxi.identity import RunIdentity
from yuxi.services.runs.service import RunService

__all__ = ["Identity", "as_kwargs", "make_claimed_run", "make_user", "restore_memory_quota"]

#: Runs live for the whole benchmark: a lease that cannot expire mid-measurement.
LONG_LEASE_SECONDS = 12 * 3600


# Built through the services, exactly as the product creates them (the benchmarks import
# nothing from the tests, so the tests may import the benchmarks).
Identity = RunIdentity


async def make_user(c: Container, *, memory: bool = True, name: str = "tester") -> str:
    """A user (with an initialised workspace) whose memory switch is ``memory``. User names
    are unique per installation, so ``name`` gets a short random suffix (a kept database can
    be benchmarked again)."""
    issued = await c.services.users.create_user(f"{name}-{uuid.uuid4().hex[:8]}")
    await c.services.users.set_memory_enabled(issued.uid, memory)
    return issued.uid


async def make_claimed_run(c: Container, uid: str) -> Identity:
    """A chat run on a new thread, claimed by a fresh worker with a long lease."""
    thread = await c.services.chat.create_thread(uid)
    run, _ = await c.services.chat.submit(uid, thread.thread_id, "benchmark run")
    claimed = await RunService(c.uow, lease_seconds=LONG_LEASE_SECONDS).claim(run.id)
    assert claimed is not None
    return claimed.identity


async def restore_memory_quota(c: Container, identities: Iterable[RunIdentity]) -> None:
    """Give runs their whole per-run memory write quota back (untimed, between rounds): one
    benchmark writer stands for many agent runs, each of which would have a quota of its own."""
    run_ids = [identity.run_id for identity in identities]
    async with c.session_factory() as session, session.begin():
        await session.execute(
            update(AgentRun)
            .where(AgentRun.id.in_(run_ids))
            .values(memory_writes=0, memory_write_bytes=0)
        )


def as_kwargs(identity: RunIdentity) -> dict[str, str | None]:
    """The five identity values (sent to writer processes, which rebuild the identity)."""
    return asdict(identity)


_FACT_TEMPLATES = (
    "- Prefers {en} answers; 回答时{cjk}。",
    "- 用户的{cjk}习惯: uses {en} every {day}.",
    "- Project codename for the {en} work is {code}; 相关的{cjk}在周五评审。",
    "- Allergic to {en}; 不吃{cjk}。",
    "- Timezone is UTC+8 (上海); meetings about {en} after 10:00.",
    "- 称呼用户为“{code}”; likes {en} and {cjk}.",
)
_DAYS = ("monday", "tuesday", "friday", "weekend", "morning")


def realistic_memory(target_bytes: int, *, seed: int = 7) -> str:
    """A MEMORY.md of about ``target_bytes`` UTF-8 bytes: short mixed CJK/English fact lines."""
    rng = random.Random(seed)
    lines = ["# Memory", ""]
    size = len("\n".join(lines).encode())
    while True:
        line = rng.choice(_FACT_TEMPLATES).format(
            en=" ".join(rng.choices(EN_WORDS[20:], k=rng.randint(1, 3))),
            cjk="".join(rng.choices(CJK_WORDS, k=rng.randint(1, 3))),
            day=rng.choice(_DAYS),
            code=f"{rng.choice(EN_WORDS[20:])}-{rng.randint(10, 999)}",
        )
        if size + len(line.encode()) + 1 > target_bytes:
            break
        lines.append(line)
        size += len(line.encode()) + 1
    return "\n".join(lines) + "\n"


def durable_publish(path: Path, data: bytes) -> None:
    """The physical floor of a safe file replace: temp + write + fsync + rename + dir fsync."""
    directory = path.parent
    temp = directory / f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(temp, path)
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def naive_append(path: Path, content: str) -> None:
    """What a generic edit-file tool does: read, append, write back in place; no lock, no fsync."""
    with open(path, "r+", encoding="utf-8", errors="replace") as f:
        text = f.read()
        head = text.rstrip()
        new = (head + "\n\n" + content + "\n") if head else content + "\n"
        f.seek(0)
        f.write(new)
        f.truncate()


def count_entries(text: str, expected: list[str]) -> dict[str, int]:
    """How many expected entries are present exactly once, missing, or duplicated (whole lines)."""
    counts: dict[str, int] = {}
    for line in text.splitlines():
        line = line.strip()
        if line:
            counts[line] = counts.get(line, 0) + 1
    once = missing = duplicated = 0
    for entry in expected:
        n = counts.get(entry, 0)
        if n == 1:
            once += 1
        elif n == 0:
            missing += 1
        else:
            duplicated += 1
    return {"present_once": once, "missing": missing, "duplicated": duplicated}


def write_plain(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
