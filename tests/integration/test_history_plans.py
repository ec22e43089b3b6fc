"""The history tools plan every statement with its parameters; nothing else does.

psycopg prepares a statement after 5 runs and PostgreSQL may then use a generic plan. For the
history search that plan reads a heavy user's whole history (B4), so the history tools set
``plan_cache_mode = force_custom_plan`` for their own transaction only; the write path and the
rest of the app keep PostgreSQL's default, which spares them re-planning (B1).
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from tests.support.factories import make_thread, make_user
from yuxi.bootstrap import Container
from yuxi.repositories.lookback import SearchRequest
from yuxi.services.unit_of_work import unit_of_work_factory


async def _plan_cache_mode(session: AsyncSession) -> str:
    return str((await session.execute(text("SHOW plan_cache_mode"))).scalar_one())


async def test_history_calls_plan_with_parameters_for_their_transaction_only(
    container: Container,
) -> None:
    uid = await make_user(container)
    thread_id = await make_thread(container, uid)
    uow_factory = unit_of_work_factory(container.session_factory)
    async with uow_factory() as uow:
        session = uow.threads.session
        assert await _plan_cache_mode(session) == "auto"
        await uow.lookback.search_messages(SearchRequest(uid=uid, query="deploy", limit=5))
        assert await _plan_cache_mode(session) == "force_custom_plan"
    async with uow_factory() as uow:
        assert await _plan_cache_mode(uow.threads.session) == "auto"
        await uow.lookback.read_messages(
            uid, thread_id, message_id=None, limit=5, include_tools=False
        )
        assert await _plan_cache_mode(uow.threads.session) == "force_custom_plan"
    async with uow_factory() as uow:  # the same pooled connection, a new transaction
        assert await _plan_cache_mode(uow.threads.session) == "auto"
