"""Ranked history search: the terms of every searchable message, indexed per user.

What it adds:

* ``yuxi_search_terms(text) → text[]``: the one definition of what a *term* is, used for the
  stored messages and for every query alike (so the two can never disagree). NFKC (full-width
  ``ＡＢＣ`` is ``abc``), lower case, then runs of letters and digits; a run of Han, Hiragana or
  Katakana (written without spaces) becomes its overlapping character bigrams (``乌龙茶`` →
  ``乌龙``, ``龙茶``), a lone such character stays one term. A word is cut to 64 characters.
  The order and repetitions are kept: a term's frequency in a message is how often it occurs,
  the message's length how many terms it has.
* ``message_search``: one narrow row per searchable message (role user/assistant, type text:
  the tools' allowlist) with its owner, thread, run, time and terms. Kept by triggers on
  ``messages``, so every way a message is written (the app, COPY, a restore) indexes it in the
  same transaction: a new message is searchable as soon as its run commits it.
* ``GIN (uid, terms)`` (btree_gin for ``uid``): the caller's messages holding a term are found
  inside the index. Without btree_gin: ``GIN (terms)`` and the owner checked on the rows found
  (same results, slower for a term common across users).
* ``conversations.searchable_messages`` / ``searchable_terms``: per-thread running totals kept
  by triggers on ``message_search``, so the corpus size and mean length over the caller's
  visible threads are a sum over threads, not a scan of messages.
* The per-user trigram index of 0005 is dropped: the ranked search finds quoted phrases
  through their terms and checks the phrase on those rows only.

The triggers on ``messages`` are created first, each in its own short transaction (creating
one waits for the inserts in flight): from then on every new message is indexed by them, and
every older one is committed, so the backfill that follows sees it. Existing messages are then
indexed in batches of ``BATCH`` ids, each its own transaction, and the GIN index is built
``CONCURRENTLY``: no writer waits for more than a trigger's creation. The times for 10M rows are
in ``docs/performance.md``. Running it twice changes nothing.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from yuxi.db.migration_support import ensure_extension, extension_schema, index_is_invalid

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

BATCH = 200_000
INDEX = "ix_message_search_uid_terms"
TRGM_INDEX = "ix_messages_uid_content_trgm"  # 0005's

#: Scripts written without spaces between words: Hiragana, Katakana, CJK Extension A, CJK
#: Unified Ideographs, CJK Compatibility Ideographs.
_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"

TERMS_FUNCTION = f"""
CREATE OR REPLACE FUNCTION yuxi_search_terms(content text) RETURNS text[]
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
DECLARE
  word text;
  n int;
  terms text[] := '{{}}';
BEGIN
  FOREACH word IN ARRAY regexp_split_to_array(
      regexp_replace(lower(normalize(content, NFKC)), '([{_CJK}]+)', ' \\1 ', 'g'),
      '[^[:alnum:]]+')
  LOOP
    n := char_length(word);
    IF n = 0 THEN
      CONTINUE;
    END IF;
    IF n > 1 AND word ~ '^[{_CJK}]' THEN
      FOR i IN 1 .. n - 1 LOOP
        terms := terms || substr(word, i, 2);
      END LOOP;
    ELSE
      terms := terms || left(word, 64);
    END IF;
  END LOOP;
  RETURN terms;
END
$fn$
"""

# The rows of ``messages`` indexed below are those the history tools may ever show: role
# user/assistant, type text (``_history_visibility``'s allowlist; a test compares the two).

TRIGGER_FUNCTIONS = """
CREATE OR REPLACE FUNCTION yuxi_index_new_messages() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO message_search (message_id, uid, conversation_id, run_id, created_at, terms)
  SELECT id, uid, conversation_id, run_id, created_at, yuxi_search_terms(content)
  FROM new_messages WHERE role IN ('user', 'assistant') AND message_type = 'text'
  ON CONFLICT (message_id) DO NOTHING;
  RETURN NULL;
END
$fn$;

CREATE OR REPLACE FUNCTION yuxi_reindex_changed_messages() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  -- Only rows whose indexed columns changed (an update of metadata leaves the index alone).
  DELETE FROM message_search WHERE message_id IN (
    SELECT n.id FROM new_messages n JOIN old_messages o ON o.id = n.id
    WHERE (n.content, n.role, n.message_type, n.uid, n.conversation_id, n.run_id, n.created_at)
          IS DISTINCT FROM
          (o.content, o.role, o.message_type, o.uid, o.conversation_id, o.run_id, o.created_at));
  INSERT INTO message_search (message_id, uid, conversation_id, run_id, created_at, terms)
  SELECT n.id, n.uid, n.conversation_id, n.run_id, n.created_at, yuxi_search_terms(n.content)
  FROM new_messages n
  WHERE n.role IN ('user', 'assistant') AND n.message_type = 'text'
    AND NOT EXISTS (SELECT 1 FROM message_search s WHERE s.message_id = n.id);
  RETURN NULL;
END
$fn$;

CREATE OR REPLACE FUNCTION yuxi_count_indexed() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  UPDATE conversations c
  SET searchable_messages = c.searchable_messages + d.messages,
      searchable_terms = c.searchable_terms + d.terms
  FROM (SELECT conversation_id, count(*) AS messages, sum(cardinality(terms)) AS terms
        FROM indexed GROUP BY conversation_id ORDER BY conversation_id) d
  WHERE c.id = d.conversation_id;
  RETURN NULL;
END
$fn$;

CREATE OR REPLACE FUNCTION yuxi_uncount_indexed() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  UPDATE conversations c
  SET searchable_messages = c.searchable_messages - d.messages,
      searchable_terms = c.searchable_terms - d.terms
  FROM (SELECT conversation_id, count(*) AS messages, sum(cardinality(terms)) AS terms
        FROM unindexed GROUP BY conversation_id ORDER BY conversation_id) d
  WHERE c.id = d.conversation_id;
  RETURN NULL;
END
$fn$;
"""


def _index_existing(bind: sa.Connection, low: int, high: int) -> None:
    """Index the searchable messages with ``low < id <= high`` that are not indexed yet."""
    bind.execute(
        sa.text(
            "INSERT INTO message_search "
            "(message_id, uid, conversation_id, run_id, created_at, terms) "
            "SELECT m.id, m.uid, m.conversation_id, m.run_id, m.created_at, "
            "yuxi_search_terms(m.content) "
            "FROM messages m WHERE m.id > :low AND m.id <= :high "
            "AND m.role IN ('user', 'assistant') AND m.message_type = 'text' "
            "AND NOT EXISTS (SELECT 1 FROM message_search s WHERE s.message_id = m.id) "
            "ON CONFLICT (message_id) DO NOTHING"
        ),
        {"low": low, "high": high},
    )


def upgrade() -> None:
    bind = op.get_bind()
    op.execute(TERMS_FUNCTION)
    op.execute(
        "ALTER TABLE conversations "
        "ADD COLUMN IF NOT EXISTS searchable_messages bigint NOT NULL DEFAULT 0, "
        "ADD COLUMN IF NOT EXISTS searchable_terms bigint NOT NULL DEFAULT 0"
    )
    op.execute(
        """
        CREATE TABLE IF NOT EXISTS message_search (
          message_id bigint PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
          uid varchar NOT NULL,
          conversation_id bigint NOT NULL,
          run_id varchar(36),
          created_at timestamptz NOT NULL,
          terms text[] NOT NULL
        )
        """
    )
    # The windowed corpus walks the newest messages of a user, or of one thread.
    op.execute(
        "CREATE INDEX IF NOT EXISTS ix_message_search_uid_created_at "
        "ON message_search (uid, created_at DESC, message_id DESC)"
    )
    op.execute(
        "CREATE INDEX IF NOT EXISTS ix_message_search_conversation_created_at "
        "ON message_search (conversation_id, created_at DESC, message_id DESC)"
    )
    op.execute(
        "CREATE INDEX IF NOT EXISTS ix_message_search_run_id "
        "ON message_search (run_id) WHERE run_id IS NOT NULL"
    )
    op.execute(TRIGGER_FUNCTIONS)
    op.execute("DROP TRIGGER IF EXISTS message_search_counted ON message_search")
    op.execute(
        "CREATE TRIGGER message_search_counted AFTER INSERT ON message_search "
        "REFERENCING NEW TABLE AS indexed FOR EACH STATEMENT "
        "EXECUTE FUNCTION yuxi_count_indexed()"
    )
    op.execute("DROP TRIGGER IF EXISTS message_search_uncounted ON message_search")
    op.execute(
        "CREATE TRIGGER message_search_uncounted AFTER DELETE ON message_search "
        "REFERENCING OLD TABLE AS unindexed FOR EACH STATEMENT "
        "EXECUTE FUNCTION yuxi_uncount_indexed()"
    )
    btree_gin = ensure_extension(bind, "btree_gin", without=f"{INDEX} indexes the terms alone")

    with op.get_context().autocommit_block():
        # The triggers first, each created in its own short transaction: creating one waits
        # for the inserts in flight and commits at once, so every message is either committed
        # before it (and visible to the batches below) or indexed by it.
        op.execute(
            "CREATE OR REPLACE TRIGGER messages_indexed AFTER INSERT ON messages "
            "REFERENCING NEW TABLE AS new_messages FOR EACH STATEMENT "
            "EXECUTE FUNCTION yuxi_index_new_messages()"
        )
        op.execute(
            "CREATE OR REPLACE TRIGGER messages_reindexed AFTER UPDATE ON messages "
            "REFERENCING OLD TABLE AS old_messages NEW TABLE AS new_messages "
            "FOR EACH STATEMENT EXECUTE FUNCTION yuxi_reindex_changed_messages()"
        )
        # Then the existing messages, batch by batch, each batch committed on its own.
        top = bind.execute(sa.text("SELECT coalesce(max(id), 0) FROM messages")).scalar_one()
        low = 0
        while low < top:
            _index_existing(bind, low, low + BATCH)
            low += BATCH

    columns = "uid, terms" if btree_gin is not None else "terms"
    with op.get_context().autocommit_block():
        if index_is_invalid(bind, INDEX):
            op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {INDEX}")
        op.execute(
            f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {INDEX} "
            f"ON message_search USING gin ({columns})"
        )
        op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {TRGM_INDEX}")
        op.execute("ANALYZE message_search")


def downgrade() -> None:
    """Back to 0007: no term index; the per-user trigram index where pg_trgm and btree_gin are."""
    op.execute("DROP TRIGGER IF EXISTS messages_indexed ON messages")
    op.execute("DROP TRIGGER IF EXISTS messages_reindexed ON messages")
    op.execute("DROP TABLE IF EXISTS message_search")
    op.execute("DROP FUNCTION IF EXISTS yuxi_index_new_messages()")
    op.execute("DROP FUNCTION IF EXISTS yuxi_reindex_changed_messages()")
    op.execute("DROP FUNCTION IF EXISTS yuxi_count_indexed()")
    op.execute("DROP FUNCTION IF EXISTS yuxi_uncount_indexed()")
    op.execute("DROP FUNCTION IF EXISTS yuxi_search_terms(text)")
    op.execute(
        "ALTER TABLE conversations DROP COLUMN IF EXISTS searchable_messages, "
        "DROP COLUMN IF EXISTS searchable_terms"
    )
    bind = op.get_bind()
    trgm = extension_schema(bind, "pg_trgm")
    if trgm is not None and extension_schema(bind, "btree_gin") is not None:
        opclass = bind.dialect.identifier_preparer.quote_identifier(trgm) + ".gin_trgm_ops"
        with op.get_context().autocommit_block():
            op.execute(
                f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {TRGM_INDEX} "
                f"ON messages USING gin (uid, content {opclass})"
            )
