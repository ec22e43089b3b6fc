"""What one run and one memory write ask of PostgreSQL, counted (issue 35).

Speed is measured in benchmarks; these tests pin the *work* instead, which does not depend on
the machine: the statements, transactions and round trips of a chat run (on the app's engine
and on the LangGraph checkpointer's own pool) and of one ``remember_memory`` write. A change that
adds a statement or a transaction to a hot path fails here; a change that removes one updates
the numbers on purpose (and docs/performance.md says what it bought).

Counted through public hooks only (``tests/support/statements.py``): SQLAlchemy's engine events
and a psycopg cursor class on the checkpointer's connections. Round trips on the engine are its
statements plus one ``BEGIN`` per transaction (psycopg sends it before the first statement) plus
each ``COMMIT`` / ``ROLLBACK``.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import text

from tests.support.factories import make_run, make_user, remember
from tests.support.history import new_thread
from tests.support.statements import CountingCursor, Counts, counting, thread_hops
from yuxi import limits
from yuxi.agents.models.factory import build_chat_model
from yuxi.bootstrap import Container, build_worker
from yuxi.db.checkpointer import open_checkpointer
from yuxi.runtime.agent_runtime import AgentRuntime, RunLimits
from yuxi.runtime.worker import Worker
from yuxi.settings import Settings


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    # No heartbeat inside a counted run, however slow the machine: its renewal is the
    # heartbeat's cost (one statement every YUXI_HEARTBEAT_SECONDS), not the run's.
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        heartbeat_seconds=3600,
        lease_seconds=7200,
    )


@pytest.fixture
async def counted_worker(container: Container) -> AsyncIterator[Worker]:
    """The configured (offline) model; the checkpointer's pool makes counting cursors."""
    s = container.settings
    async with open_checkpointer(container.database_url, cursor_factory=CountingCursor) as saver:
        runtime = AgentRuntime(
            model=build_chat_model(s),
            checkpointer=saver,
            limits=RunLimits(s.run_model_call_limit, s.run_tool_call_limit, s.run_timeout_seconds),
            metrics=container.metrics,
        )
        yield build_worker(container, runtime, name="counted-worker")


async def _counted_run(
    container: Container, worker: Worker, uid: str, thread: str, text: str
) -> tuple[Counts, list[str], list[str]]:
    """Claim and execute one run of ``text``: what the engine and the checkpointer sent, and
    what went to the event loop's thread pool."""
    chat = container.services.chat
    run, _ = await chat.submit(uid, thread, text)
    CountingCursor.sent.clear()
    with counting(container.engine) as seen, thread_hops() as hops:
        claimed = await worker.claim()
        assert claimed is not None and claimed.identity.run_id == run.id
        await worker.execute_claimed(claimed)
    assert (await chat.get_run(uid, run.id)).status == "completed"
    return seen, list(CountingCursor.sent), hops


#: The thread hops of a run (``thread_hops``; in any order): its workspace made sure of and its
#: two context files read (``AGENTS.md``, ``USER.md``) in one, ``MEMORY.md`` read in another as
#: it starts ...
_HOPS_AT_START = ["_read_context_files_sync", "Workspace.read_file_prefix_sync"]
#: ... a memory write's lock file taken and the new ``MEMORY.md`` published ...
_HOPS_OF_A_MEMORY_WRITE = ["_open_lock_then", "_replace_sync"]
#: ... and LangGraph's checkpointer: the pending writes of the thread's checkpoint loaded (by the
#: graph: a chat run after a completed one does not read the checkpoint itself), the new blobs
#: serialized as the graph exits. Nothing else: LangSmith's (untraced) bookkeeping of each
#: middleware hook stays on the loop (``yuxi.agents.trace_hooks``).
_HOPS_OF_THE_CHECKPOINTER = ["BasePostgresSaver._load_writes", "BasePostgresSaver._dump_blobs"]


def _profile(seen: Counts) -> dict[str, int]:
    return {
        "statements": len(seen.statements),
        "transactions": seen.begins,
        "commits": seen.commits,
        "rollbacks": seen.rollbacks,
        "round_trips": seen.round_trips,
        "events": len(seen.matching("INSERT INTO run_events")),
    }


async def test_a_chat_run_with_a_memory_write(container: Container, counted_worker: Worker) -> None:
    """A chat run of a thread's second turn, as in B8: a ``remember_memory`` call, then a reply.

    Statements, one line each, all but the memory write's outside a transaction block (no
    ``BEGIN``, no ``COMMIT``: ``one_statement``; each step of the record is one statement of
    data-modifying CTEs fenced by the lease, ``RunService.recording``):
    the claim (the claimed row and the owner's memory switch come back with the update);
    the run's start (``running`` event, the memory snapshot, how the thread's previous run
    ended read with whether it left calls open — none here, so no statement closes them);
    the model's step (message, ToolCall row, ``tool_start``);
    the memory write (one transaction: gate, record);
    the tool's step (message, ToolCall row found and finished, ``tool_end``);
    the reply's first text, the moment it streams;
    the last step and the end (the rest of the text, reply message, ``message`` and
    ``run_status`` events, the run row settled).
    A message names its thread in the statement that appends it and touches the thread (no
    read of the thread's row); the events of a step are one insert in its statement (start: 2
    events, the model's step: 1, the tool's step: 1, the first text: 1, the end: 3).
    """
    uid = await make_user(container, memory=True)
    thread = (await container.services.chat.create_thread(uid)).thread_id
    await _counted_run(container, counted_worker, uid, thread, "remember: first qzxfact")
    seen, checkpointer, hops = await _counted_run(
        container, counted_worker, uid, thread, "remember: second qzxfact"
    )
    assert _profile(seen) == {
        "statements": 8,
        "transactions": 1,
        "commits": 1,
        "rollbacks": 0,
        "round_trips": 10,
        # [running, memory_snapshot], [tool_start], [tool_end], [token],
        # [token, message, completed]
        "events": 5,
    }, seen.statements
    # Each of the three messages (tool call, tool result, reply) is appended by its step's one
    # statement, the lease fenced in it.
    assert len(seen.matching("INSERT INTO messages")) == 3
    assert len(seen.matching("WITH fence AS")) == 5
    # The thread's row is never read first.
    assert not [s for s in seen.statements if s.startswith("SELECT conversations.")]
    # The memory write: the gate then the record, two statements in one transaction.
    assert len(seen.matching("pg_advisory_xact_lock")) == 1
    assert len(seen.matching("WITH newest AS")) == 1
    # The checkpointer: the thread's checkpoint read once, by the graph as it starts (the
    # executor reads it only for a resume run or after a run that did not complete), and saved
    # once as the graph exits (design.md §7): the channels' blobs that changed (messages, the
    # memory middleware's state, the run limits) and the checkpoint row.
    assert len(checkpointer) == 5, checkpointer
    assert sum(s.startswith("select thread_id, checkpoint") for s in checkpointer) == 1
    assert sum(s.startswith("INSERT INTO checkpoints ") for s in checkpointer) == 1
    assert sum(s.startswith("INSERT INTO checkpoint_blobs") for s in checkpointer) == 3
    assert sorted(hops) == sorted(
        _HOPS_AT_START + _HOPS_OF_A_MEMORY_WRITE + _HOPS_OF_THE_CHECKPOINTER
    ), hops


async def test_a_chat_run_without_tools(container: Container, counted_worker: Worker) -> None:
    """A plain reply: no tool call, no memory write, no tool result. Four statements, no
    transaction block: the claim (which reads the switch too), the start, the reply's first text
    as it streams, the reply with the end. The run makes sure of its user's workspace in the hop
    that reads the context files: one removed since the last run is back, at no extra cost."""
    uid = await make_user(container, memory=True)
    thread = (await container.services.chat.create_thread(uid)).thread_id
    await _counted_run(container, counted_worker, uid, thread, "hello qzxfirst")
    workspace = container.workspace(uid).directory
    shutil.rmtree(workspace)
    seen, checkpointer, hops = await _counted_run(
        container, counted_worker, uid, thread, "hello again"
    )
    assert (workspace / "agents" / "MEMORY.md").is_file()
    assert _profile(seen) == {
        "statements": 4,
        "transactions": 0,
        "commits": 0,
        "rollbacks": 0,
        "round_trips": 4,
        "events": 3,  # [running, memory_snapshot], [token], [token, message, completed]
    }, seen.statements
    assert len(checkpointer) == 3, checkpointer
    assert sorted(hops) == sorted(_HOPS_AT_START + _HOPS_OF_THE_CHECKPOINTER), hops


async def test_a_memory_write_is_two_statements_in_one_transaction(
    container: Container,
) -> None:
    """``remember_memory`` in steady state: BEGIN, gate, record, COMMIT — four round trips."""
    uid = await make_user(container)
    run = await make_run(container, uid)
    assert (await remember(container, run, "first 第一"))["status"] == "updated"
    with counting(container.engine) as seen:
        result = await remember(container, run, "second 第二")
    assert result["status"] == "updated"
    assert _profile(seen) == {
        "statements": 2,
        "transactions": 1,
        "commits": 1,
        "rollbacks": 0,
        "round_trips": 4,
        "events": 0,
    }, seen.statements


async def test_the_counts_see_what_they_count(container: Container) -> None:
    """The hooks are live: one more statement and one more transaction are counted as such
    (a counter that saw nothing would pass every test above by accident of equal numbers)."""
    uid = await make_user(container)
    run = await make_run(container, uid)
    with counting(container.engine) as seen:
        await remember(container, run, "one qzxcount")
        await remember(container, run, "two qzxcount")
    assert (len(seen.statements), seen.begins, seen.commits) == (4, 2, 2)


async def test_one_statement_blocks_send_one_statement_and_no_transaction(
    container: Container,
) -> None:
    """What a stream's page, a request's authentication and a run's status ask of the server:
    one statement each, in no transaction block (``UnitOfWorkFactory.one_statement``) — no
    ``BEGIN`` before it, no ``ROLLBACK`` after."""
    uid = await make_user(container)
    chat, users = container.services.chat, container.services.users
    token = (await users.create_token(uid, label="t")).token
    thread = (await chat.create_thread(uid)).thread_id
    run, _ = await chat.submit(uid, thread, "hello qzxread")
    with counting(container.engine) as seen:
        page = await chat.stream_page(uid, run.id, 0)
        assert await users.authenticate(token) == uid
        assert (await chat.get_run(uid, run.id)).status == "pending"
    assert [e.event_type for e in page.events] == ["run_status"] and not page.settled
    assert (len(seen.statements), seen.round_trips) == (3, 3), seen.statements


async def test_a_one_statement_block_is_outside_any_transaction(container: Container) -> None:
    """The server's side of it: while a ``one_statement`` block runs, its connection is idle (no
    transaction open on it), where an ordinary block's is in a transaction."""

    async def status(autocommit: bool) -> object:
        factory = container.uow
        async with factory.one_statement() if autocommit else factory() as uow:
            await uow.users.memory_enabled("nobody")
            connection = await uow.users.session.connection()
            raw = await connection.get_raw_connection()
            return raw.driver_connection.info.transaction_status  # type: ignore[union-attr]

    assert await status(autocommit=True) == psycopg.pq.TransactionStatus.IDLE
    assert await status(autocommit=False) == psycopg.pq.TransactionStatus.INTRANS


async def test_a_chat_request_is_one_statement(
    container: Container, counted_worker: Worker
) -> None:
    """The POST of a thread's second turn: one statement, outside a transaction block, that
    holds the thread (the caller's, active) and inserts the run, the insert itself checking the
    request id (``ON CONFLICT DO NOTHING``) and the approval state (the row and its worker's
    wake-up come back with it; no read first, no savepoint), with the user message (the thread
    touched) and the ``pending`` event."""
    uid = await make_user(container)
    chat = container.services.chat
    thread = (await chat.create_thread(uid)).thread_id
    await _counted_run(container, counted_worker, uid, thread, "hello qzxpost")
    with counting(container.engine) as seen:
        run, created = await chat.submit(uid, thread, "again 第二 qzxpost")
    assert created and run.status == "pending" and run.conversation_thread_id == thread
    assert _profile(seen) == {
        "statements": 1,
        "transactions": 0,
        "commits": 0,
        "rollbacks": 0,
        "round_trips": 1,
        "events": 1,
    }, seen.statements
    assert seen.statements[0].startswith("WITH thread AS (SELECT conversations.id")
    # The run's wake-up and the event's, both in the one statement's RETURNING clauses.
    assert seen.statements[0].count("pg_notify(") == 2, seen.statements


async def test_a_first_message_titles_its_thread_in_its_own_statement(
    container: Container,
) -> None:
    """A thread's first turn costs what a later one does: the title comes with the message's
    statement (no ``UPDATE conversations SET title`` at the commit). An agent call: its run's
    request id read first (a retry must not make a thread), its thread inserted, then the
    same submission statement."""
    uid = await make_user(container)
    chat = container.services.chat
    thread = (await chat.create_thread(uid)).thread_id
    with counting(container.engine) as seen:
        await chat.submit(uid, thread, "first qzxtitle")
    assert (len(seen.statements), seen.round_trips) == (1, 1), seen.statements
    assert not seen.matching("UPDATE conversations SET title=%(title)s")
    with counting(container.engine) as seen:
        await chat.submit_agent_call(uid, "one shot qzxtitle")
    assert (len(seen.statements), seen.round_trips) == (3, 5), seen.statements
    titles = [t.title for t in await chat.list_threads(uid)]
    assert titles == ["first qzxtitle"]
    async with container.uow() as uow:
        calls = await uow.threads.list_conversations(uid, sources=("agent_call",))
    assert [t.title for t in calls] == ["one shot qzxtitle"]


async def test_a_retried_chat_request_reads_its_run_and_writes_nothing(
    container: Container,
) -> None:
    """A retry of a request that has its run: the submission that writes nothing (no run, so
    no message and no event either), then — to answer why — the thread and the run by its
    request id, each read alone (no transaction block: no ROLLBACK, which would make psycopg
    forget its prepared statements)."""
    uid = await make_user(container)
    chat = container.services.chat
    thread = (await chat.create_thread(uid)).thread_id
    run, _ = await chat.submit(uid, thread, "hello qzxretry", request_id="qzx-retry")
    with counting(container.engine) as seen:
        again, created = await chat.submit(uid, thread, "hello qzxretry", request_id="qzx-retry")
    assert again.id == run.id and not created
    assert _profile(seen) == {
        "statements": 3,
        "transactions": 0,
        "commits": 0,
        "rollbacks": 0,
        "round_trips": 3,
        "events": 1,  # the submission's statement holds the event's insert: it wrote none
    }, seen.statements
    async with container.session_factory() as s:
        written = await s.execute(
            text(
                "SELECT (SELECT count(*) FROM run_events WHERE run_id = :id),"
                " (SELECT count(*) FROM messages WHERE content = 'hello qzxretry')"
            ),
            {"id": run.id},
        )
    assert tuple(written.one()) == (1, 1)  # the first request's event and message only


async def test_the_stream_sweep_is_two_statements_and_no_transaction(
    container: Container,
) -> None:
    """The event streams' safety net (``ChatService.stream_state``): the tokens' standings and
    the runs' last seqs, each one statement in autocommit (they need no common snapshot) — no
    ``BEGIN``, no ``ROLLBACK`` (which would make psycopg forget its prepared statements)."""
    uid = await make_user(container)
    chat, users = container.services.chat, container.services.users
    token = (await users.create_token(uid, label="t")).token
    thread = (await chat.create_thread(uid)).thread_id
    run, _ = await chat.submit(uid, thread, "hello qzxsweep")
    with counting(container.engine) as seen:
        standings, seqs = await chat.stream_state([token, "yx_unknown"], [run.id, "no-such-run"])
    assert set(standings) == {token} and standings[token][0] == uid
    assert seqs == {run.id: 1}
    assert (len(seen.statements), seen.round_trips) == (2, 2), seen.statements
    await users.revoke_tokens(uid)
    assert await chat.stream_state([token], []) == ({}, {})


async def test_a_long_history_search_is_six_statements_and_a_miss_five(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lookback search of a long history (``LookbackService.search_thread_messages``), one
    transaction: the memory switch, the plan setting, the query's terms, the corpus totals, one
    ranking statement (the sample, the counted terms, the windowed corpus, BM25) and the shown
    rows — the sample and the probes are no statements of their own (they were two, and a third
    when nothing ranked). A search that ranks nothing reads no shown rows."""
    monkeypatch.setattr(limits, "SEARCH_FULL_CORPUS_MESSAGES", 20)
    monkeypatch.setattr(limits, "SEARCH_TERM_HOLDERS", 10)
    monkeypatch.setattr(limits, "SEARCH_WINDOW_MESSAGES", 8)
    uid = await make_user(container)
    await new_thread(container, uid, ["the needle lives here", *(f"common {i}" for i in range(30))])
    lookback = container.services.lookback
    with counting(container.engine) as seen:
        found = (
            await lookback.search_thread_messages(uid=uid, query="common needle", limit=5)
        ).body
    assert found["complete"] is False and found["items"], found
    assert (len(seen.statements), seen.round_trips) == (6, 8), seen.statements
    with counting(container.engine) as seen:
        missed = (await lookback.search_thread_messages(uid=uid, query="qzxabsent", limit=5)).body
    assert missed["items"] == []
    assert (len(seen.statements), seen.round_trips) == (5, 7), seen.statements
