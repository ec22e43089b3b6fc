"""The AgentRun lease primitives on real PostgreSQL."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from tests.support.factories import make_thread, make_user, sql
from yuxi.bootstrap import Container
from yuxi.db.models import AgentRun
from yuxi.errors import ActiveRunExists, Conflict
from yuxi.repositories.runs.agent_run_repository import AgentRunRepository
from yuxi.repositories.runs.step_repository import RunStepRepository, StepWrites


async def _create(c: Container, uid: str, thread: str, request_id: str, run_type: str = "chat"):  # type: ignore[no-untyped-def]
    async with c.session_factory() as s, s.begin():
        return await AgentRunRepository(s).create_run(
            uid=uid, thread_id=thread, request_id=request_id, run_type=run_type
        )


async def _finish(
    s: AsyncSession, run: AgentRun, worker: str, status: str, output: dict[str, Any] | None = None
) -> bool:
    """The run's end as its worker records it (a step with nothing but the end)."""
    writes = StepWrites()
    writes.settle(status, output=output, error_code=None, error_message=None)
    result = await RunStepRepository(s).record(
        run.id, worker, run.uid, run.conversation_thread_id, writes
    )
    return result.fenced and result.ended


async def test_create_is_idempotent_on_request_id(container: Container) -> None:
    uid = await make_user(container)
    thread = await make_thread(container, uid)
    first, created = await _create(container, uid, thread, "req-1")
    again, created_again = await _create(container, uid, thread, "req-1")
    assert created and not created_again and again.id == first.id


async def test_request_id_reused_for_another_thread_conflicts(container: Container) -> None:
    uid = await make_user(container)
    t1, t2 = await make_thread(container, uid), await make_thread(container, uid)
    await _create(container, uid, t1, "req-x")
    with pytest.raises(Conflict):
        await _create(container, uid, t2, "req-x")


async def test_request_ids_are_per_user(container: Container) -> None:
    a, b = await make_user(container), await make_user(container)
    ra, _ = await _create(container, a, await make_thread(container, a), "same")
    rb, created = await _create(container, b, await make_thread(container, b), "same")
    assert created and ra.id != rb.id


async def test_one_active_run_per_thread(container: Container) -> None:
    uid = await make_user(container)
    thread = await make_thread(container, uid)
    await _create(container, uid, thread, "r1")
    with pytest.raises(ActiveRunExists):
        await _create(container, uid, thread, "r2")
    await sql(container, "UPDATE agent_runs SET status = 'completed'")
    _, created = await _create(container, uid, thread, "r3")
    assert created


async def test_concurrent_claims_never_share_a_run(container: Container) -> None:
    uid = await make_user(container)
    for i in range(10):
        await _create(container, uid, await make_thread(container, uid), f"r{i}")

    async def claim() -> tuple[str, str] | None:
        async with container.session_factory() as s, s.begin():
            run = await AgentRunRepository(s).claim_next(lease_seconds=30)
            return None if run is None else (run.id, run.worker_id or "")

    results = await asyncio.gather(*(claim() for _ in range(16)))
    claimed = [r for r in results if r is not None]
    assert len(claimed) == 10
    assert len({run_id for run_id, _ in claimed}) == 10
    assert len({worker for _, worker in claimed}) == 10  # a fresh token per claim


async def test_a_claim_says_whether_others_are_pending(container: Container) -> None:
    """``more_pending``: another claimable run was pending when this one was claimed (a SubAgent
    run, never claimable, does not count)."""
    uid = await make_user(container)
    for i in range(2):
        await _create(container, uid, await make_thread(container, uid), f"r{i}")
    await _create(container, uid, await make_thread(container, uid), "sub", run_type="subagent")
    seen = []
    for _ in range(3):
        async with container.session_factory() as s, s.begin():
            run = await AgentRunRepository(s).claim_next(lease_seconds=30)
            seen.append(None if run is None else run.more_pending)
    assert seen == [True, False, None]


async def test_subagent_runs_are_never_claimed_by_workers(container: Container) -> None:
    uid = await make_user(container)
    await _create(container, uid, await make_thread(container, uid), "sub", run_type="subagent")
    async with container.session_factory() as s, s.begin():
        assert await AgentRunRepository(s).claim_next(lease_seconds=30) is None


async def test_renew_and_finish_need_the_owner_and_a_live_lease(container: Container) -> None:
    uid = await make_user(container)
    run, _ = await _create(container, uid, await make_thread(container, uid), "r")
    async with container.session_factory() as s, s.begin():
        repo = AgentRunRepository(s)
        claimed = await repo.claim(run.id, lease_seconds=30)
        assert claimed is not None and claimed.worker_id
        worker = claimed.worker_id
        assert await repo.renew_lease(run.id, worker, lease_seconds=30)
        assert not await repo.renew_lease(run.id, "w_forged", lease_seconds=30)
        assert not await _finish(s, run, "w_forged", "completed")
    await sql(
        container,
        "UPDATE agent_runs SET lease_expires_at = now() - interval '1 second' WHERE id = :id",
        id=run.id,
    )
    async with container.session_factory() as s, s.begin():
        repo = AgentRunRepository(s)
        assert not await repo.renew_lease(run.id, worker, lease_seconds=30)
        assert not await _finish(s, run, worker, "completed")
        assert await repo.reconcile_expired() == [run.id]
        assert await repo.reconcile_expired() == []  # reconciled once
        final = await repo.get(run.id)
        assert final is not None
        assert (final.status, final.error_code) == ("failed", "worker_lease_expired")


async def test_finish_by_owner(container: Container) -> None:
    uid = await make_user(container)
    run, _ = await _create(container, uid, await make_thread(container, uid), "r")
    async with container.session_factory() as s, s.begin():
        repo = AgentRunRepository(s)
        claimed = await repo.claim(run.id, lease_seconds=30)
        assert claimed is not None and claimed.worker_id
        assert await _finish(s, run, claimed.worker_id, "completed", {"a": 1})
        assert not await _finish(s, run, claimed.worker_id, "failed")
        done = await repo.get(run.id)
        assert done is not None and done.status == "completed" and done.finished_at is not None


async def test_orphaned_subagent_run_is_failed_with_its_dead_parent(container: Container) -> None:
    uid = await make_user(container)
    parent, _ = await _create(container, uid, await make_thread(container, uid), "parent")
    async with container.session_factory() as s, s.begin():
        repo = AgentRunRepository(s)
        await repo.claim(parent.id, lease_seconds=30)
        child, _ = await repo.create_run(
            uid=uid,
            thread_id=await make_thread(container, uid),
            request_id="child",
            run_type="subagent",
            status="running",
            created_by_run_id=parent.id,
        )
        assert await repo.reconcile_expired() == []  # parent alive: child left alone
    await sql(
        container,
        "UPDATE agent_runs SET lease_expires_at = now() - interval '1 second' WHERE id = :id",
        id=parent.id,
    )
    async with container.session_factory() as s, s.begin():
        assert sorted(await AgentRunRepository(s).reconcile_expired()) == sorted(
            [parent.id, child.id]
        )
        final = await AgentRunRepository(s).get(child.id)
        assert final is not None and final.error_code == "parent_run_ended"
