"""Search terms, second edition: English stemming for Latin-script words, and single Han
characters found inside longer runs.

What changes in the one definition of a term (0008's ``yuxi_search_terms``):

* **Stemming.** A word written only in Latin letters is reduced to its Snowball English stem
  (``moved`` → ``move``, ``relocated`` → ``reloc``, ``living`` → ``live``) by PostgreSQL's own
  Snowball stemmer, through a dictionary of ours, ``yuxi_english_stem``, made without a stop-word
  list: every word stays a term (the built-in ``english_stem`` drops ``the``, ``a``, … and a
  query of such words would then hold no term). Words with digits or in other scripts are
  unchanged. Quoted phrases still match exact words: a phrase's terms find the candidates, and
  the phrase itself is then checked in the message text (design.md §6.2).
* **Single characters.** A run of Han, Hiragana or Katakana is stored as its bigrams *and* its
  characters (``乌龙茶`` → ``乌龙``, ``龙茶``, ``乌``, ``龙``, ``茶``), as Lucene's and
  Elasticsearch's CJK bigram filters do with unigram output on. A query keeps bigrams for a run
  of two or more characters and the character for a lone one, so ``茶`` finds ``我喜欢喝乌龙茶``
  while ``乌龙茶`` still ranks by its bigrams.

So the function is split: ``yuxi_terms(text, unigrams)`` holds the rule;
``yuxi_search_terms(text)`` (stored messages, unchanged name: 0008's triggers call it) is it with
unigrams, ``yuxi_query_terms(text)`` (queries and phrases) without.

Re-indexing is online, as 0008's indexing was: the new functions take effect at once for every
message written from then on (the triggers call them by name); the rows already indexed are
then rewritten in batches of ``BATCH`` ids, each its own short transaction, skipping rows whose
terms do not change. A new statement trigger on ``message_search`` updates keeps the per-thread
running totals exact (a Chinese message gains terms); it only touches a thread whose total moved,
so re-indexing English text locks no ``conversations`` row. Until it finishes, the older rows
rank by their old terms (a search still works, a stemmed query word just misses an unstemmed
stored one). Running it twice changes nothing.

Rewriting a row leaves its old version behind, and every rewritten row also gets new index
entries, so a table rewritten whole would end up about twice its size (measured: searches on it
2-3 times slower, until the space is reused). So every ``VACUUM_EVERY`` batches the table is
vacuumed, which lets the next batches reuse the space the earlier ones freed, so the table grows
by about a fifth, not double. A GIN index does not give back its pages that way, so the terms
index is then rebuilt ``CONCURRENTLY`` (as 0008 built it; a leftover of an interrupted rebuild is
dropped first). Neither blocks a reader or a writer.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-05
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

BATCH = 50_000
#: Vacuum after this many batches (and at the end): about a fifth of the table at a time for a
#: table of a million rows, so the rewrite grows the table by about that much, not by its size.
VACUUM_EVERY = 4
DICTIONARY = "yuxi_english_stem"
TERMS_INDEX = "ix_message_search_uid_terms"  # 0008's

#: Scripts written without spaces between words (as in 0008).
_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
#: Lower-case Latin letters: ASCII, Latin-1 (without ÷), Latin Extended-A/B, Latin Extended
#: Additional. A word made only of these is stemmed.
_LATIN = r"a-z\u00df-\u00f6\u00f8-\u024f\u1e00-\u1eff"


def _terms_function(dictionary: str) -> str:
    """``dictionary``: the stemmer's schema-qualified name, so the function works whatever the
    caller's ``search_path`` (a restore runs with an empty one)."""
    return f"""
CREATE OR REPLACE FUNCTION yuxi_terms(content text, unigrams boolean) RETURNS text[]
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
    IF word ~ '^[{_CJK}]' THEN
      IF n = 1 THEN
        terms := terms || word;
      ELSE
        FOR i IN 1 .. n - 1 LOOP
          terms := terms || substr(word, i, 2);
        END LOOP;
        IF unigrams THEN
          FOR i IN 1 .. n LOOP
            terms := terms || substr(word, i, 1);
          END LOOP;
        END IF;
      END IF;
    ELSE
      word := left(word, 64);
      IF word ~ '^[{_LATIN}]+$' THEN
        word := coalesce((ts_lexize('{dictionary}'::regdictionary, word))[1], word);
      END IF;
      terms := terms || word;
    END IF;
  END LOOP;
  RETURN terms;
END
$fn$;

CREATE OR REPLACE FUNCTION yuxi_search_terms(content text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN yuxi_terms(content, true);

CREATE OR REPLACE FUNCTION yuxi_query_terms(content text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN yuxi_terms(content, false);
"""


RECOUNT_FUNCTION = """
CREATE OR REPLACE FUNCTION yuxi_recount_indexed() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  UPDATE conversations c
  SET searchable_terms = c.searchable_terms + d.terms
  FROM (SELECT conversation_id, sum(n) AS terms FROM (
          SELECT conversation_id, cardinality(terms) AS n FROM reindexed
          UNION ALL
          SELECT conversation_id, -cardinality(terms) FROM unreindexed) x
        GROUP BY conversation_id HAVING sum(n) <> 0 ORDER BY conversation_id) d
  WHERE c.id = d.conversation_id;
  RETURN NULL;
END
$fn$;
"""


def _reindex(bind: sa.Connection, low: int, high: int) -> None:
    """Rewrite the terms of the indexed messages with ``low < id <= high`` that change."""
    bind.execute(
        sa.text(
            "UPDATE message_search s SET terms = t.terms "
            "FROM (SELECT m.id, yuxi_search_terms(m.content) AS terms FROM messages m "
            "      WHERE m.id > :low AND m.id <= :high) t "
            "WHERE s.message_id = t.id AND s.terms IS DISTINCT FROM t.terms"
        ),
        {"low": low, "high": high},
    )


def _reindex_all(bind: sa.Connection) -> None:
    """Every indexed message under the terms functions as they are now, batch by batch (each
    batch its own transaction: call inside an autocommit block), vacuumed as it goes (module
    docstring), then vacuumed and analysed once more."""
    top = bind.execute(
        sa.text("SELECT coalesce(max(message_id), 0) FROM message_search")
    ).scalar_one()
    low = 0
    batches = 0
    while low < top:
        _reindex(bind, low, low + BATCH)
        low += BATCH
        batches += 1
        if batches % VACUUM_EVERY == 0 and low < top:
            bind.execute(sa.text("VACUUM message_search"))
    bind.execute(sa.text("VACUUM (ANALYZE) message_search"))
    leftovers = bind.execute(
        sa.text(
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE c.relname LIKE :name AND NOT i.indisvalid"
        ),
        {"name": f"{TERMS_INDEX}_ccnew%"},
    ).scalars()
    for name in list(leftovers):
        bind.execute(sa.text(f'DROP INDEX CONCURRENTLY IF EXISTS "{name}"'))
    bind.execute(sa.text(f"REINDEX INDEX CONCURRENTLY {TERMS_INDEX}"))


def _create_dictionary() -> None:
    """``DICTIONARY`` in the current schema (a second run finds it there)."""
    op.execute(
        """
        DO $$
        BEGIN
          IF NOT EXISTS (SELECT 1 FROM pg_ts_dict d
                         JOIN pg_namespace n ON n.oid = d.dictnamespace
                         WHERE d.dictname = 'yuxi_english_stem'
                           AND n.nspname = current_schema()) THEN
            CREATE TEXT SEARCH DICTIONARY yuxi_english_stem (TEMPLATE = pg_catalog.snowball,
                                                        Language = english);
          END IF;
        END
        $$
        """
    )


def upgrade() -> None:
    bind = op.get_bind()
    schema = bind.execute(sa.text("SELECT current_schema()")).scalar_one()
    quoted = bind.dialect.identifier_preparer.quote_identifier(schema)
    _create_dictionary()
    op.execute(_terms_function(f"{quoted}.{DICTIONARY}"))
    op.execute(RECOUNT_FUNCTION)
    op.execute("DROP TRIGGER IF EXISTS message_search_recounted ON message_search")
    op.execute(
        "CREATE TRIGGER message_search_recounted AFTER UPDATE ON message_search "
        "REFERENCING OLD TABLE AS unreindexed NEW TABLE AS reindexed FOR EACH STATEMENT "
        "EXECUTE FUNCTION yuxi_recount_indexed()"
    )
    with op.get_context().autocommit_block():
        # Every message committed from here on is indexed with the new terms (the triggers call
        # the functions by name); the older ones are rewritten batch by batch, each committed
        # on its own so no writer waits on more than one batch's thread totals.
        _reindex_all(bind)


def downgrade() -> None:
    """Back to 0008's terms (no stemming, no single characters inside runs), re-indexed the
    same way, then the new functions, trigger and dictionary dropped."""
    bind = op.get_bind()
    op.execute(_terms_0008().TERMS_FUNCTION)
    with op.get_context().autocommit_block():
        _reindex_all(bind)
    op.execute("DROP TRIGGER IF EXISTS message_search_recounted ON message_search")
    op.execute("DROP FUNCTION IF EXISTS yuxi_recount_indexed()")
    op.execute("DROP FUNCTION IF EXISTS yuxi_query_terms(text)")
    op.execute("DROP FUNCTION IF EXISTS yuxi_terms(text, boolean)")
    op.execute(f"DROP TEXT SEARCH DICTIONARY IF EXISTS {DICTIONARY}")


def _terms_0008() -> Any:
    """Migration 0008's module (its file name is not an identifier)."""
    path = Path(__file__).with_name("0008_message_search.py")
    spec = importlib.util.spec_from_file_location("yuxi_migration_0008", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
