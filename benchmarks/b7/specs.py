"""The shapes B7's corpus is written in (the English and Chinese data fill them in).

Templates are ``str.format`` strings. A field named after a slot of the fact takes that slot's
value (the same value in every template of one fact); a field ``any_<pool>`` takes a fresh value
of ``<pool>`` each time. Chinese question templates separate their words with ``|`` (the words
are what a model would pick out as keywords); English ones are plain questions whose keywords
are their words minus :attr:`Language.stop_words`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

__all__ = ["FactSpec", "Language", "MultiSpec", "ReplySpec"]


@dataclass(frozen=True)
class FactSpec:
    """One fact stated once by the user; asked once in its own words, once in other words."""

    key: str
    slots: Mapping[str, str]  # slot -> pool
    answer: tuple[str, ...]  # the slots whose values answer the question
    statements: tuple[str, ...]
    single: tuple[str, ...]  # questions sharing most content words with the statement
    paraphrase: tuple[str, ...]  # questions sharing only some
    distractors: tuple[str, ...]  # other user lines sharing words, never the answer
    title: str
    #: How many instances per user (> 1 only where every question names its instance, e.g.
    #: the relative's name: two relatives who moved share most of their words).
    repeat: int = 1


@dataclass(frozen=True)
class MultiSpec:
    """Two user lines in two threads months apart; a question both of them answer."""

    key: str
    slots: Mapping[str, str]
    first: tuple[str, ...]
    second: tuple[str, ...]
    answer: tuple[str, ...]  # the slots that carry the answer (any of them in each line)
    questions: tuple[str, ...]
    titles: tuple[str, str]


@dataclass(frozen=True)
class ReplySpec:
    """A user's question answered by the assistant's very next line; asked again months later.

    The later question shares content words with the user's line (``asks``) and none with the
    assistant's (``replies``, which hold the answer): a word search finds the ask, and only the
    ask's neighbour holds the answer.
    """

    key: str
    slots: Mapping[str, str]
    answer: tuple[str, ...]  # the slots whose values answer the question (only in the reply)
    asks: tuple[str, ...]  # the user's line: the topic's words, never the answer
    replies: tuple[str, ...]  # the assistant's answer: no word of any question
    questions: tuple[str, ...]  # asked later: words of the ask, never the answer
    distractors: tuple[str, ...]  # other user lines sharing the ask's words, never the answer
    title: str


@dataclass(frozen=True)
class Language:
    code: str
    pools: Mapping[str, tuple[str, ...]]
    facts: tuple[FactSpec, ...]
    multis: tuple[MultiSpec, ...]
    replies: tuple[ReplySpec, ...]
    topics: tuple[str, ...]  # temporal topics: each only ever in its planted lines
    topic_events: tuple[str, ...]  # user lines about a topic (field ``noun``)
    temporal_questions: Mapping[str, str]  # "window" / "before" / "after" (``noun``, ``when``)
    month_phrase: Callable[[int, int], str]  # (year, month) -> "March 2026" / "2026年3月"
    stop_words: frozenset[str]
    filler_user: tuple[str, ...]
    filler_assistant: tuple[str, ...]
    acks: tuple[str, ...]  # the assistant's answer to a planted line (never repeats it)
    filler_titles: tuple[str, ...]
    segmented: bool  # questions are "|"-separated words (Chinese)
