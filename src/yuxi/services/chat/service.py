"""Chat threads and the runs on them.

A chat request becomes a run: the user message and a pending AgentRun, in one transaction.
Workers (``yuxi.runtime.worker``) claim and execute the runs; this service only accepts work,
answers questions about it, turns approval decisions into ``resume`` runs, and keeps the user's
threads (create, list, view, archive, delete to the trash).

Reads return ORM rows detached from their (closed) session: the session factory does not expire
on commit, so their loaded columns stay readable. Only :func:`run_view` shapes a run for callers.
"""

from __future__ import annotations

from collections.abc import Callable

from yuxi.db.models import AgentRun, Conversation
from yuxi.errors import Conflict, InvalidArgument, NotFound, Unauthorized
from yuxi.limits import RUN_INPUT_MAX_BYTES, TITLE_MAX_CHARS, TRASH_DAYS
from yuxi.repositories.runs.run_event_repository import StreamedEvent
from yuxi.repositories.thread_repository import ThreadRef
from yuxi.repositories.token_repository import hash_credential, well_formed
from yuxi.services.chat._cancel import cancel_in
from yuxi.services.chat._decisions import (
    DECISIONS,
    answer_again,
    decision_of,
    decision_request_id,
    decision_views,
)
from yuxi.services.chat._rules import auto_title, check_request_id, check_thread_title
from yuxi.services.chat._trash import ThreadTrash, move_to_trash
from yuxi.services.chat.views import (
    MessageSummary,
    StreamPage,
    ThreadDetail,
    ThreadSummary,
    ToolCallSummary,
    thread_summary,
)
from yuxi.services.memory import ThreadForgetView, ThreadMemory, ThreadMemoryView
from yuxi.services.unit_of_work import UnitOfWork, UnitOfWorkFactory
from yuxi.utils.string_utils import check_text
from yuxi.vocabulary import AGENT_CALL_SOURCES
from yuxi.workspace.filesystem import Workspace


async def _live_thread(uow: UnitOfWork, uid: str, thread_id: str) -> Conversation:
    """The caller's own, not deleted thread; anyone else's (or a deleted one) is NotFound."""
    conversation = await uow.threads.get_owned(uid, thread_id)
    if conversation is None or conversation.status == "deleted":
        raise NotFound("thread not found")
    return conversation


async def _live_thread_ref(uow: UnitOfWork, uid: str, thread_id: str) -> ThreadRef:
    """:func:`_live_thread` as a :class:`ThreadRef` (one prebuilt statement, no ORM row)."""
    thread = await uow.threads.get_owned_ref(uid, thread_id)
    if thread is None or thread.status == "deleted":
        raise NotFound("thread not found")
    return thread


class ChatService:
    def __init__(
        self,
        uow: UnitOfWorkFactory,
        workspaces: Callable[[str], Workspace],
        *,
        trash_days: int = TRASH_DAYS,
    ) -> None:
        self._uow = uow
        self._thread_memory = ThreadMemory(uow, workspaces)
        #: The deleted threads: listed, restored, purged (``yuxi.services.chat._trash``).
        self.trash = ThreadTrash(uow, days=trash_days)

    # -- threads ------------------------------------------------------------------------------

    async def create_thread(
        self, uid: str, *, title: str = "", source: str = "chat"
    ) -> ThreadSummary:
        async with self._uow() as uow:
            conversation = await uow.threads.create_conversation(
                uid, title=title[:TITLE_MAX_CHARS], source=source
            )
            await uow.commit()
        return thread_summary(conversation)

    async def list_threads(
        self, uid: str, *, include_archived: bool = False, limit: int = 50
    ) -> list[ThreadSummary]:
        """The caller's top-level chat threads, newest updated first."""
        async with self._uow() as uow:
            rows = await uow.threads.list_conversations(
                uid, include_archived=include_archived, limit=limit
            )
        return [thread_summary(c) for c in rows]

    async def get_thread(self, uid: str, thread_id: str) -> ThreadDetail:
        async with self._uow() as uow:
            conversation = await _live_thread(uow, uid, thread_id)
            messages = await uow.threads.list_messages(conversation.id)
            calls = await uow.tool_calls.list_for_messages(
                [m.id for m in messages if m.message_type == "tool_call"]
            )
            # The decisions on the runs shown, by their derived ids (the unique index).
            shown_runs = sorted({m.run_id for m in messages if m.run_id is not None})
            decided = await uow.runs.get_by_requests(
                uid, [decision_request_id(run_id) for run_id in shown_runs]
            )
        return ThreadDetail(
            **vars(thread_summary(conversation)),
            messages=[
                MessageSummary.of(m, [ToolCallSummary.of(row) for row in calls.get(m.id, [])])
                for m in messages
            ],
            decisions=decision_views(decided),
        )

    async def update_thread(
        self,
        uid: str,
        thread_id: str,
        *,
        title: object = None,
        recall_excluded: object = None,
    ) -> ThreadSummary:
        """Rename the caller's ordinary thread and/or hide it from (or show it to) the history
        tools. At least one field; ``None`` leaves a field as it is. Another user's thread, a
        deleted one, an agent-call thread or a SubAgent's child is NotFound."""
        if title is None and recall_excluded is None:
            raise InvalidArgument("give at least one of title, recall_excluded")
        new_title = None if title is None else check_thread_title(title)
        if recall_excluded is not None and not isinstance(recall_excluded, bool):
            raise InvalidArgument("recall_excluded must be true or false")
        async with self._uow() as uow:
            conversation = await uow.threads.get_owned_chat_thread(uid, thread_id)
            if conversation is None:
                raise NotFound("thread not found")
            await uow.threads.update_thread_settings(
                conversation, title=new_title, recall_excluded=recall_excluded
            )
            await uow.commit()
        return thread_summary(conversation)

    async def archive_thread(self, uid: str, thread_id: str) -> ThreadSummary:
        return await self._set_thread_status(uid, thread_id, "archived")

    async def unarchive_thread(self, uid: str, thread_id: str) -> ThreadSummary:
        return await self._set_thread_status(uid, thread_id, "active")

    async def delete_thread(
        self, uid: str, thread_id: str, *, forget_memory: bool = False
    ) -> ThreadForgetView | None:
        """Move the caller's thread to the trash (:func:`move_to_trash`: its active runs are
        cancelled; restorable for ``YUXI_TRASH_DAYS``, then purged whole, see
        :class:`ThreadTrash`). Without ``forget_memory`` MEMORY.md is left as it is (``None``).
        With it, the entries the thread wrote (:meth:`thread_memory`) are removed in one
        ``forget`` version, in the same transaction as the deletion, under the memory locks
        (see ``yuxi.services.memory._forget``); a restore does not bring them back."""

        async def delete(uow: UnitOfWork) -> None:
            await move_to_trash(uow, uid, thread_id)

        forgotten = None
        if forget_memory:
            forgotten = await self._thread_memory.delete_and_forget(uid, thread_id, delete)
        else:
            async with self._uow() as uow:
                await _live_thread(uow, uid, thread_id)
                await delete(uow)
                await uow.commit()
        await self.trash.purge_if_immediate(uid, thread_id)
        return forgotten

    async def thread_memory(self, uid: str, thread_id: str) -> ThreadMemoryView:
        """The entries of MEMORY.md the caller's thread wrote (what a delete would forget)."""
        return await self._thread_memory.entries(uid, thread_id)

    async def _set_thread_status(self, uid: str, thread_id: str, status: str) -> ThreadSummary:
        async with self._uow() as uow:
            conversation = await _live_thread(uow, uid, thread_id)
            # set_status refreshes the loaded row's status and updated_at too.
            await uow.threads.set_status(uid, thread_id, status)
            await uow.commit()
        return thread_summary(conversation)

    # -- starting runs ------------------------------------------------------------------------

    async def submit(
        self, uid: str, thread_id: str, text: object, *, request_id: object = None
    ) -> tuple[AgentRun, bool]:
        """Persist the user message and a pending chat run. Idempotent on ``request_id``.

        The rules, in this order: a thread that is not the user's (or is in the trash) is
        NotFound; an archived thread is a Conflict; a request that already has its run gets it
        back (another thread's: Conflict); a thread waiting for an approval decision is a
        Conflict; a thread with an active run is ActiveRunExists. One statement checks them all
        and writes the run, the user message (an untitled thread taking its title from it) and
        the ``pending`` event (``AgentRunRepository.submit_message``), outside a transaction
        block: no read first, nothing after. Only a request it wrote nothing for is read again,
        to answer which rule refused it (:meth:`_not_submitted`)."""
        body = check_text("input", text, max_bytes=RUN_INPUT_MAX_BYTES)
        rid = check_request_id(request_id)
        async with self._uow.one_statement() as uow:
            run = await uow.runs.submit_message(
                uid=uid,
                thread_id=thread_id,
                request_id=rid,
                input_payload={"input": body},
                content=body,
                title=auto_title(body),
            )
        if run is not None:
            return run, True
        return await self._not_submitted(uid, thread_id, rid), False

    async def _not_submitted(self, uid: str, thread_id: str, request_id: str) -> AgentRun:
        """Why a submission wrote nothing (:meth:`submit`'s rules): the run a retried request
        already has, or the refusal. Two reads, each alone: they need no common snapshot (the
        submission's answer is already given), and a block that only reads would end in a
        ``ROLLBACK``, which makes psycopg forget the connection's prepared statements."""
        async with self._uow.one_statement() as uow:
            thread = await _live_thread_ref(uow, uid, thread_id)
        if thread.status != "active":
            raise Conflict("thread is archived; unarchive it to continue")
        async with self._uow.one_statement() as uow:
            return await uow.runs.request_run(
                uid, thread_id, request_id, unless_awaiting_decision=True
            )

    async def submit_agent_call(
        self, uid: str, text: object, *, source: str = "agent_call", request_id: object = None
    ) -> tuple[AgentRun, bool]:
        """A one-shot run in a new ``agent_call`` (or ``agent_evaluation``) thread."""
        if source not in AGENT_CALL_SOURCES:
            raise InvalidArgument("source must be agent_call or agent_evaluation")
        body = check_text("input", text, max_bytes=RUN_INPUT_MAX_BYTES)
        rid = check_request_id(request_id)
        async with self._uow() as uow:
            existing = await uow.runs.get_by_request(uid, rid)
            if existing is not None:
                return existing, False
            conversation = await uow.threads.create_conversation(uid, source=source)
            run = await uow.runs.submit_message(
                uid=uid,
                thread_id=conversation.thread_id,
                request_id=rid,
                input_payload={"input": body},
                content=body,
                title=auto_title(body),
            )
            if run is None:
                # The request's run was written meanwhile, by a concurrent retry on its own new
                # thread: that run is the answer, and this thread is rolled back.
                existing = await uow.runs.get_by_request(uid, rid)
                if existing is None:
                    raise RuntimeError(f"run of request {rid!r} neither written nor found")
                return existing, False
            await uow.commit()
        return run, True

    async def resume(self, uid: str, run_id: str, decision: object) -> tuple[AgentRun, bool]:
        """Turn an approve/reject decision on an interrupted run into a ``resume`` run."""
        if decision not in DECISIONS:
            raise InvalidArgument("decision must be 'approve' or 'reject'")
        async with self._uow() as uow:
            interrupted = await uow.runs.get_owned(uid, run_id)
            if interrupted is None:
                raise NotFound("run not found")
            # One decision per interruption: the request id is derived from the run (a prefix
            # only the server uses), and whatever holds it must be this interruption's resume.
            request_id = decision_request_id(run_id)
            existing = await uow.runs.get_by_request(uid, request_id)
            if existing is not None:
                # The same decision again gets its run; the other one is AlreadyDecided.
                return answer_again(existing, run_id, decision), False
            if interrupted.status != "interrupted":
                raise Conflict(f"run is {interrupted.status}, not waiting for approval")
            # Same rule as a new message: only an active thread runs (a deleted one is gone).
            thread = await _live_thread(uow, uid, interrupted.conversation_thread_id)
            if thread.status != "active":
                raise Conflict("thread is archived; unarchive it to continue")
            run, created = await uow.runs.create_run(
                uid=uid,
                thread_id=interrupted.conversation_thread_id,
                request_id=request_id,
                run_type="resume",
                input_payload={"decision": decision},
                created_by_run_id=run_id,
            )
            decision_of(run, run_id)  # a lost race returns the winner: it must be one too
            if not created:
                return answer_again(run, run_id, decision), False
            await uow.events.append(run.id, "run_status", {"status": "pending"})
            await uow.commit()
        return run, True

    async def cancel(self, uid: str, run_id: str) -> AgentRun:
        async with self._uow() as uow:
            run = await uow.runs.get_owned(uid, run_id)
            if run is None:
                raise NotFound("run not found")
            await cancel_in(uow, run)
            refreshed = await uow.runs.get(run_id)
            assert refreshed is not None
            await uow.commit()
        return refreshed

    # -- reading runs -------------------------------------------------------------------------

    async def get_run(self, uid: str, run_id: str) -> AgentRun:
        async with self._uow.one_statement() as uow:
            run = await uow.runs.read_owned(uid, run_id)
        if run is None:
            raise NotFound("run not found")
        return run

    async def events_after(
        self, uid: str, run_id: str, after_seq: int = 0, limit: int = 500
    ) -> list[StreamedEvent]:
        """The run's events after ``after_seq`` (another user's run is NotFound)."""
        return (await self.stream_page(uid, run_id, after_seq, limit)).events

    async def stream_page(
        self, uid: str, run_id: str, after_seq: int, limit: int = 500, *, token: str | None = None
    ) -> StreamPage:
        """What an event stream sends next: the run's status and its events after
        ``after_seq``, read in one statement (one snapshot), so a settled status means every
        event of the run is among those read (a run settles in the transaction that records its
        last event). With the stream's ``token``, the same statement tells whether it still
        authenticates ``uid`` and for how long (``token_left``). Another user's run, or one
        that is gone, is NotFound."""
        token_hash = None if token is None else hash_credential(token)
        async with self._uow.one_statement() as uow:
            page = await uow.events.owned_page(uid, run_id, after_seq, limit, token_hash=token_hash)
        if page is None:
            raise NotFound("run not found")
        return StreamPage.of(page, limit)

    async def open_stream(
        self, token: str, run_id: str, after_seq: int, limit: int = 500
    ) -> tuple[str, StreamPage]:
        """An event stream's first page, for the stream's bearer ``token`` alone: the user it
        authenticates and what :meth:`stream_page` reads for that user's run, in one statement
        (one snapshot) — a stream opens on one query, not an authentication, an existence check
        and its first page. A token that authenticates nobody is Unauthorized (before anything
        of the run is told); another user's run, or one that is gone, is NotFound."""
        if not well_formed(token):
            raise Unauthorized("invalid token")
        async with self._uow.one_statement() as uow:
            opening = await uow.events.opening_page(
                hash_credential(token), run_id, after_seq, limit
            )
        if opening is None:
            raise Unauthorized("invalid token")
        if opening.page is None:
            raise NotFound("run not found")
        return opening.uid, StreamPage.of(opening.page, limit)

    async def stream_state(
        self, tokens: list[str], run_ids: list[str]
    ) -> tuple[dict[str, tuple[str, float | None]], dict[str, int]]:
        """For the process's own safety net over its open event streams: which ``tokens``
        still authenticate (token → uid and seconds left by the database clock, None = no
        expiry; a missing token is revoked, expired or unknown) and the last event seq of each
        run in ``run_ids``. Nothing of it reaches a client (it only tells a stream to end or to
        re-read; the re-read checks the owner), so no owner is checked.

        Two reads, each a ``one_statement`` block (no ``BEGIN``, no ``ROLLBACK``, which would
        make psycopg forget the connection's prepared statements): they need no common
        snapshot. Each answer is acted on alone — a stream ends on its token's standing, is
        woken on its run's seq — and both are only as fresh as the moment they are read: a
        revocation or an event committed between the two reads (or after both) is caught by
        its notification or the next sweep, as it would be with one snapshot."""
        standings: dict[str, tuple[str, float | None]] = {}
        seqs: dict[str, int] = {}
        if tokens:
            async with self._uow.one_statement() as uow:
                standings = await uow.tokens.standings(tokens)
        if run_ids:
            async with self._uow.one_statement() as uow:
                seqs = await uow.events.latest_seqs(run_ids)
        return standings, seqs

    async def thread_runs(self, uid: str, thread_id: str) -> list[AgentRun]:
        """The thread's top-level runs (no SubAgent runs), oldest first; another user's
        thread is NotFound."""
        async with self._uow() as uow:
            await _live_thread(uow, uid, thread_id)
            runs = await uow.runs.list_for_thread(uid, thread_id)
        return [run for run in runs if run.run_type != "subagent"]
