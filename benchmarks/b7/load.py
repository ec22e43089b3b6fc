"""B7: the corpus into the database by COPY, and the baselines' view of a user's messages.

Users (memory on), threads (active ``chat`` conversations) and messages go in with explicit ids
reserved from their sequences, in ``created_at`` order, so message ``key`` k of the corpus is row
``first_id + k``. :data:`VISIBLE` is the history tools' visibility (design §6.1) written out in
the benchmark, so the baselines read exactly the messages the product may show.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from benchmarks.b7.corpus import Corpus
from benchmarks.datagen import reserve_ids

__all__ = ["LITERAL_SEARCH", "Loaded", "VisibleMessage", "literal_search", "load", "visible"]

VISIBLE = """
SELECT m.id, c.thread_id, m.created_at, m.content
FROM messages m JOIN conversations c ON c.id = m.conversation_id
WHERE m.uid = %(uid)s AND c.uid = %(uid)s AND c.status = 'active' AND c.source = 'chat'
  AND NOT c.recall_excluded
  AND NOT EXISTS (SELECT 1 FROM subagent_threads s WHERE s.child_conversation_id = c.id)
  AND m.role IN ('user', 'assistant') AND m.message_type = 'text'
ORDER BY m.id
"""
#: Today's search, as shipped before issue 26: the whole query as one literal, case-insensitive
#: substring, newest first (no date filter: that tool has none). Same visibility as VISIBLE.
LITERAL_SEARCH = """
SELECT m.id, c.thread_id
FROM messages m JOIN conversations c ON c.id = m.conversation_id
WHERE m.uid = %(uid)s AND c.uid = %(uid)s AND c.status = 'active' AND c.source = 'chat'
  AND NOT c.recall_excluded
  AND NOT EXISTS (SELECT 1 FROM subagent_threads s WHERE s.child_conversation_id = c.id)
  AND m.role IN ('user', 'assistant') AND m.message_type = 'text'
  AND m.content ILIKE '%%' || %(q)s || '%%' ESCAPE '\\'
ORDER BY m.created_at DESC, m.id DESC
LIMIT %(limit)s
"""


@dataclass(frozen=True)
class Loaded:
    first_message_id: int
    first_thread_pk: int

    def message_id(self, key: int) -> int:
        return self.first_message_id + key


@dataclass(frozen=True)
class VisibleMessage:
    id: int
    thread_id: str
    created_at: datetime
    content: str


def load(conn: psycopg.Connection[Any], corpus: Corpus) -> Loaded:
    """COPY the corpus in (one transaction) and ANALYZE the two history tables."""
    last_at: dict[int, datetime] = {}
    for m in corpus.messages:
        last_at[m.thread] = m.created_at
    with conn.cursor() as cur:
        with cur.copy("COPY users (uid, name) FROM STDIN") as copy:
            for uid in corpus.user_langs:
                copy.write_row((uid, f"B7 user {uid}"))
        with cur.copy("COPY user_config (uid, enable_memory) FROM STDIN") as copy:
            for uid in corpus.user_langs:
                copy.write_row((uid, True))
        first_thread = reserve_ids(cur, "conversations", len(corpus.threads))
        with cur.copy(
            "COPY conversations (id, thread_id, uid, title, status, source, created_at, "
            "updated_at) FROM STDIN"
        ) as copy:
            for t in corpus.threads:
                copy.write_row(
                    (
                        first_thread + t.index,
                        t.thread_id,
                        t.uid,
                        t.title,
                        "active",
                        "chat",
                        t.created_at,
                        last_at.get(t.index, t.created_at),
                    )
                )
        first_message = reserve_ids(cur, "messages", len(corpus.messages))
        with cur.copy(
            "COPY messages (id, conversation_id, uid, role, message_type, content, created_at) "
            "FROM STDIN"
        ) as copy:
            for m in corpus.messages:
                copy.write_row(
                    (
                        first_message + m.key,
                        first_thread + m.thread,
                        m.uid,
                        m.role,
                        "text",
                        m.content,
                        m.created_at,
                    )
                )
    conn.commit()
    with conn.cursor() as cur:
        cur.execute("ANALYZE messages")
        cur.execute("ANALYZE conversations")
    conn.commit()
    return Loaded(first_message, first_thread)


def visible(conn: psycopg.Connection[Any], uid: str) -> list[VisibleMessage]:
    rows = conn.execute(VISIBLE, {"uid": uid}).fetchall()
    conn.commit()
    return [VisibleMessage(int(r[0]), str(r[1]), r[2], str(r[3])) for r in rows]


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def literal_search(
    conn: psycopg.Connection[Any], uid: str, query: str, limit: int = 10
) -> list[tuple[int, str]]:
    """(message id, thread id) of today's literal search, newest first."""
    q = _like_escape(query.strip())
    rows = conn.execute(LITERAL_SEARCH, {"uid": uid, "q": q, "limit": limit}).fetchall()
    conn.commit()
    return [(int(r[0]), str(r[1])) for r in rows]
