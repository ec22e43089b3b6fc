"""B7's BM25 baselines: the ``bm25s`` library over one user's visible messages.

Three tokenizations of the same messages and queries: ``bm25s_default`` (bm25s's own tokenizer:
lower-cased ``\\w\\w+`` words, no stop words, no stemming; a CJK run without spaces is one
token), ``bm25s_terms`` (:func:`benchmarks.b7.terms.terms`: words, and CJK runs as overlapping
bigrams: the product's terms before stemming) and ``bm25s_terms_stem`` (the same with every word
of Latin letters reduced to its Snowball English stem by PyStemmer, the stemmer bm25s itself
recommends). Scores are bm25s's defaults (Lucene variant, k1 = 1.5, b = 0.75), the
query's terms counted once each. Hits are the messages with a positive score, inside the
question's dates when it has any (``after`` <= created_at < ``before``, applied to the
candidates before the top k is taken), best first, ties newest first (as the product's).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from benchmarks.b7.load import VisibleMessage
from benchmarks.b7.terms import terms

__all__ = ["TOKENIZERS", "Bm25Index", "parse_day"]

_bm25s: Any = importlib.import_module("bm25s")  # untyped library: used through Any


def _default_tokens(texts: Sequence[str]) -> list[list[str]]:
    out = _bm25s.tokenize(list(texts), stopwords=None, return_ids=False, show_progress=False)
    return [list(tokens) for tokens in out]


def _terms_tokens(texts: Sequence[str]) -> list[list[str]]:
    return [terms(text) for text in texts]


_stemmer: Any = importlib.import_module("Stemmer").Stemmer("english")
#: A word of lower-case Latin letters only (the product stems exactly these; migration 0012).
_LATIN = re.compile(r"[a-z\u00df-\u00f6\u00f8-\u024f\u1e00-\u1eff]+")


def _stemmed_tokens(texts: Sequence[str]) -> list[list[str]]:
    return [
        [_stemmer.stemWord(t) if _LATIN.fullmatch(t) else t for t in terms(text)] for text in texts
    ]


TOKENIZERS: dict[str, Callable[[Sequence[str]], list[list[str]]]] = {
    "bm25s_default": _default_tokens,
    "bm25s_terms": _terms_tokens,
    "bm25s_terms_stem": _stemmed_tokens,
}


def parse_day(value: str | None) -> datetime | None:
    """An ISO date or datetime (naive = UTC) as an aware datetime."""
    if value is None:
        return None
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


class Bm25Index:
    """One user's visible messages, indexed once for one tokenization."""

    def __init__(self, docs: Sequence[VisibleMessage], tokenizer: str) -> None:
        self.docs = list(docs)
        self.tokenize = TOKENIZERS[tokenizer]
        self.retriever = _bm25s.BM25()
        corpus = self.tokenize([d.content for d in self.docs])
        self.retriever.index(corpus, show_progress=False)
        # Each message's neighbours: the visible message before and after it in its thread
        # (the product's rule: by id within the thread).
        by_thread: dict[str, list[int]] = {}
        for d in sorted(self.docs, key=lambda d: d.id):
            by_thread.setdefault(d.thread_id, []).append(d.id)
        self.neighbours: dict[int, list[int]] = {}
        for ids in by_thread.values():
            for i, mid in enumerate(ids):
                self.neighbours[mid] = ids[max(i - 1, 0) : i] + ids[i + 1 : i + 2]

    def search(
        self,
        query: str,
        *,
        after: str | None = None,
        before: str | None = None,
        limit: int = 10,
    ) -> list[tuple[int, str]]:
        """(message id, thread id) of the top ``limit``, best first."""
        tokens = list(dict.fromkeys(self.tokenize([query])[0]))
        if not tokens or not self.docs:
            return []
        scores = [float(s) for s in self.retriever.get_scores(tokens)]
        low, high = parse_day(after), parse_day(before)
        hits = [
            i
            for i, score in enumerate(scores)
            if score > 0
            and (low is None or self.docs[i].created_at >= low)
            and (high is None or self.docs[i].created_at < high)
        ]
        hits.sort(
            key=lambda i: (-scores[i], -self.docs[i].created_at.timestamp(), -self.docs[i].id)
        )
        return [(self.docs[i].id, self.docs[i].thread_id) for i in hits[:limit]]
