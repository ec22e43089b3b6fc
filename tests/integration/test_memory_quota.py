"""The per-run memory write quota on real PostgreSQL: n writes ok, n+1 refused; the byte quota
filled exactly with CJK, one more byte refused; a refusal leaves the file and the history as
they were; an unchanged retry costs nothing; the settings reach the service."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import select

from tests.support.factories import make_run, make_user, memory_file, remember, sha256_of
from yuxi.bootstrap import Container, bootstrap
from yuxi.db.models import AgentRun
from yuxi.limits import MEMORY_BYTES_PER_RUN, MEMORY_WRITES_PER_RUN
from yuxi.settings import Settings


async def _used(container: Container, run_id: str) -> tuple[int, int]:
    async with container.session_factory() as s:
        row = (
            await s.execute(
                select(AgentRun.memory_writes, AgentRun.memory_write_bytes).where(
                    AgentRun.id == run_id
                )
            )
        ).one()
    return int(row[0]), int(row[1])


async def _version_count(container: Container, uid: str) -> int:
    return len((await container.services.memory_versions.list_versions(uid)).versions)


def test_defaults_are_five_writes_and_8_kib(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("YUXI_MEMORY_WRITES_PER_RUN", raising=False)
    monkeypatch.delenv("YUXI_MEMORY_BYTES_PER_RUN", raising=False)
    assert (MEMORY_WRITES_PER_RUN, MEMORY_BYTES_PER_RUN) == (5, 8192)
    settings = Settings()
    assert (settings.memory_writes_per_run, settings.memory_bytes_per_run) == (5, 8192)


async def test_five_writes_ok_the_sixth_refused(container: Container) -> None:
    uid = await make_user(container)
    run = await make_run(container, uid)
    remaining = []
    for n in range(5):
        result = await remember(container, run, f"事实 {n}")
        assert result["status"] == "updated", result
        remaining.append(result["quota_remaining"]["writes"])
    assert remaining == [4, 3, 2, 1, 0]
    path = memory_file(container, uid)
    before, versions = sha256_of(path), await _version_count(container, uid)

    refused = await remember(container, run, "QUOTA-REFUSED-MARK")
    assert (refused["status"], refused["code"]) == ("error", "memory_quota_exceeded")
    assert refused["error"] and refused["quota_remaining"]["writes"] == 0
    assert sha256_of(path) == before and "QUOTA-REFUSED-MARK" not in path.read_text()
    assert await _version_count(container, uid) == versions
    assert (await _used(container, run.run_id))[0] == 5

    # A retried add of something already there costs nothing, even with the quota used up.
    retry = await remember(container, run, "事实 4")
    assert retry["status"] == "unchanged" and retry["quota_remaining"]["writes"] == 0
    # The quota is the run's: the next run writes again.
    other = await make_run(container, uid)
    assert (await remember(container, other, "QUOTA-REFUSED-MARK"))["status"] == "updated"


async def test_the_byte_quota_filled_exactly_with_cjk_then_one_byte_refused(
    container: Container,
) -> None:
    uid = await make_user(container)
    run = await make_run(container, uid)
    first, second = "记" * 1365, "忆" * 1365  # 4095 bytes each
    last = "é"  # 2 bytes: 4095 + 4095 + 2 = 8192
    assert len((first + second + last).encode()) == MEMORY_BYTES_PER_RUN
    left = []
    for content in (first, second, f"  {last}\n"):  # stored, and counted, stripped
        result = await remember(container, run, content)
        assert result["status"] == "updated", result
        left.append(result["quota_remaining"]["bytes"])
    assert left == [8192 - 4095, 2, 0]
    assert await _used(container, run.run_id) == (3, 8192)
    path = memory_file(container, uid)
    before = sha256_of(path)
    refused = await remember(container, run, "x")
    assert refused["code"] == "memory_quota_exceeded"
    assert refused["quota_remaining"] == {"writes": 2, "bytes": 0}
    assert sha256_of(path) == before
    assert await _used(container, run.run_id) == (3, 8192)


async def test_a_replace_counts_its_new_text(container: Container) -> None:
    uid = await make_user(container)
    run = await make_run(container, uid)
    memory_file(container, uid).write_text("likes green tea\n")
    result = await remember(container, run, "乌龙", replaces="green")
    assert result["status"] == "updated"
    assert result["quota_remaining"] == {"writes": 4, "bytes": 8192 - 6}


@pytest.fixture
async def small_quota(settings: Settings, tmp_path: Path) -> AsyncIterator[Container]:
    """A container built from settings with a quota of 2 writes and 9 bytes (three CJK
    characters), as YUXI_MEMORY_WRITES_PER_RUN / YUXI_MEMORY_BYTES_PER_RUN would set it."""
    small = settings.model_copy(update={"memory_writes_per_run": 2, "memory_bytes_per_run": 9})
    container = await bootstrap(small)
    try:
        yield container
    finally:
        await container.aclose()


async def test_the_settings_reach_the_service_bytes(small_quota: Container) -> None:
    uid = await make_user(small_quota)
    run = await make_run(small_quota, uid)
    ok = await remember(small_quota, run, "记忆力")  # 9 bytes: exactly the quota
    assert ok["quota_remaining"] == {"writes": 1, "bytes": 0}
    before = sha256_of(memory_file(small_quota, uid))
    refused = await remember(small_quota, run, "a")
    assert refused["code"] == "memory_quota_exceeded"
    assert sha256_of(memory_file(small_quota, uid)) == before


async def test_the_settings_reach_the_service_writes(small_quota: Container) -> None:
    uid = await make_user(small_quota)
    run = await make_run(small_quota, uid)
    assert (await remember(small_quota, run, "a"))["status"] == "updated"
    assert (await remember(small_quota, run, "b"))["quota_remaining"] == {"writes": 0, "bytes": 7}
    before = sha256_of(memory_file(small_quota, uid))
    assert (await remember(small_quota, run, "c"))["code"] == "memory_quota_exceeded"
    assert sha256_of(memory_file(small_quota, uid)) == before


def test_the_quota_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("YUXI_MEMORY_WRITES_PER_RUN", "7")
    monkeypatch.setenv("YUXI_MEMORY_BYTES_PER_RUN", "300")
    settings = Settings()
    assert (settings.memory_writes_per_run, settings.memory_bytes_per_run) == (7, 300)


async def test_concurrent_writes_at_the_boundary_spend_the_last_write_once(
    container: Container,
) -> None:
    uid = await make_user(container)
    run = await make_run(container, uid)
    for n in range(4):
        assert (await remember(container, run, f"fact {n}"))["status"] == "updated"
    racers = await asyncio.gather(*(remember(container, run, f"racer {i}") for i in range(6)))
    outcomes = sorted(r["status"] if r["status"] != "error" else r["code"] for r in racers)
    assert outcomes == ["memory_quota_exceeded"] * 5 + ["updated"]
    text = memory_file(container, uid).read_text()
    assert sum(f"racer {i}" in text for i in range(6)) == 1
    assert await _used(container, run.run_id) == (5, sum(len(f"fact {n}") for n in range(4)) + 7)
