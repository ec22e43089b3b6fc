"""Who may see what in the history tools: the visibility rule, as SQL conditions.

It lives beside the statements that use it (:mod:`._search`, :mod:`._sample`, :mod:`._query`,
:mod:`._reads`, :mod:`._threads`; the thread repository takes the SubAgent-child rule). Every
statement carries the whole rule in its WHERE clause (never a Python filter), so ``LIMIT`` only
ever counts rows the caller may see:

* conversation: ``uid`` = caller, ``status = 'active'``, ``source NOT IN ('agent_call',
  'agent_evaluation')``, not ``recall_excluded`` by its owner, and ``NOT EXISTS`` a
  ``subagent_threads`` row naming it as the child;
* message: ``uid`` = caller too (the denormalised owner), ``role IN ('user', 'assistant')``,
  ``message_type IN VISIBLE_MESSAGE_TYPES`` and ``NOT IN HIDDEN_MESSAGE_TYPES``;
* search only: not a message of the searching run itself (its run, or the interrupted runs it
  resumes), so ``search history: Q`` never finds its own question first.

``uid`` and ``run_id`` arguments are the caller's values, or bind parameters in a prebuilt
statement.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Select, or_, select
from sqlalchemy.orm import aliased

from yuxi.db.models import AgentRun, Conversation, Message, SubagentThread
from yuxi.vocabulary import HIDDEN_SOURCES

#: The one error text of every thread the caller may not read or search in: foreign, hidden,
#: missing, or named with a bad anchor.
NOT_VISIBLE = "thread not found or not visible"

VISIBLE_ROLES = ("user", "assistant")
#: Never shown, whatever the allowlist below says (defence in depth).
HIDDEN_MESSAGE_TYPES = ("tool_call", "tool_result", "audit", "system_audit")
#: The allowlist. Only ordinary conversational text; any type added later (images, cards,
#: audit records, ...) stays hidden until someone decides it is ordinary and lists it here.
VISIBLE_MESSAGE_TYPES = ("text",)


def is_subagent_child() -> ColumnElement[bool]:
    """The conversation is a persisted SubAgent thread (a child of another thread)."""
    return (
        select(SubagentThread.id)
        .where(SubagentThread.child_conversation_id == Conversation.id)
        .exists()
    )


def visible_conversation(uid: Any, *, owner_view: Any = None) -> list[ColumnElement[bool]]:
    """``owner_view`` (a boolean bind parameter, or ``None`` for the model's view only): when
    true, threads the owner hid from recall are visible too — the owner's own search sees what
    the owner's thread list shows; the model's lookback never does."""
    not_hidden: ColumnElement[bool] = Conversation.recall_excluded.is_(False)
    if owner_view is not None:
        not_hidden = or_(owner_view, not_hidden)
    return [
        Conversation.uid == uid,
        Conversation.status == "active",
        Conversation.source.not_in(HIDDEN_SOURCES),
        not_hidden,
        ~is_subagent_child(),
    ]


def visible_message(uid: Any, m: Any = Message) -> list[ColumnElement[bool]]:
    """``m``: ``Message`` or an alias of it (e.g. over a subquery of its columns)."""
    return [
        m.uid == uid,
        m.role.in_(VISIBLE_ROLES),
        m.message_type.in_(VISIBLE_MESSAGE_TYPES),
        m.message_type.not_in(HIDDEN_MESSAGE_TYPES),
    ]


def own_run_chain(uid: Any, run_id: Any) -> Select[Any]:
    """The ids of run ``run_id`` of ``uid`` and of every run it resumes (``created_by_run_id``,
    recursively): the runs whose messages belong to the current request."""
    chain = (
        select(AgentRun.id, AgentRun.created_by_run_id)
        .where(AgentRun.id == run_id, AgentRun.uid == uid)
        .cte("own_run_chain", recursive=True)
    )
    earlier = aliased(AgentRun)
    chain = chain.union(
        select(earlier.id, earlier.created_by_run_id)
        .join(chain, earlier.id == chain.c.created_by_run_id)
        .where(earlier.uid == uid)
    )
    return select(chain.c.id)


def not_of_run(uid: Any, run_id: Any, m: Any = Message) -> list[ColumnElement[bool]]:
    """Leave out the messages of the current run (and of the runs it resumes)."""
    if run_id is None:
        return []
    return [or_(m.run_id.is_(None), m.run_id.not_in(own_run_chain(uid, run_id)))]


def conversation_visible(uid: Any, conversation_id: Any) -> ColumnElement[bool]:
    """The conversation ``conversation_id`` is visible to ``uid``, as one uncorrelated
    ``EXISTS``: PostgreSQL evaluates it once, before the scan (a one-time filter), so the
    statement it guards reads one table and can walk ``(conversation_id, id)`` in order."""
    return (
        select(Conversation.id)
        .where(Conversation.id == conversation_id, *visible_conversation(uid))
        .exists()
    )
