"""B7's corpus: seeded, labelled multi-session histories in English and Chinese (pure Python).

``build_corpus(seed=0, users=8)`` returns a :class:`Corpus`: users (even ones write English, odd
ones Chinese), their threads and messages over 18 months (2025-01 .. 2026-06, ``created_at``
explicit, never within a day of a month boundary) and the questions, each labelled with the
messages and threads that answer it. Per user:

* every fact of the language (:mod:`benchmarks.b7.en`, :mod:`benchmarks.b7.zh`) is stated
  once, in one user line of its own thread in the first six months, and asked twice:
  ``single`` (the question shares at least half of its content words with that line) and
  ``paraphrase`` (it shares some, at most half, and never names the answer); two or three
  distractor lines that share the fact's words but not its answer sit in other threads;
* every two-part story (``multi``) is told in two threads months apart; its question is
  answered by both lines;
* three ``temporal`` topics come up in three different months each (nowhere else); a question
  asks for one month (``after``/``before`` = that month), or for the earliest (``before``) or
  the latest (``after``) mention;
* every ``reply`` fact (:mod:`benchmarks.b7.replies`) is one exchange: the user's question
  and, right after it in the same thread, the assistant's answer; asked twice later in words of
  the question and none of the answer's line, which is the label;
* filler threads until the user has its share of messages.

A query is what a model would send: the question's content words (English: its words minus stop
words; Chinese: its words minus stop words, run together or separated by spaces, each question
chosen by the seed); a temporal query is the topic word, its dates go in ``after``/``before``
(ISO dates; every answer lies at least a day inside them).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import string
import unicodedata
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from benchmarks.b7.en import ENGLISH
from benchmarks.b7.replies import plant_replies
from benchmarks.b7.specs import Language
from benchmarks.b7.terms import is_cjk, terms
from benchmarks.b7.zh import CHINESE

__all__ = [
    "CATEGORIES",
    "LANGUAGES",
    "Corpus",
    "CorpusMessage",
    "CorpusThread",
    "Question",
    "build_corpus",
    "shared_fraction",
]

CATEGORIES = ("single", "paraphrase", "multi", "temporal", "reply")
LANGUAGES = {"en": ENGLISH, "zh": CHINESE}
#: Mixed into every thread id. B4's generator draws its thread ids from the same seeded stream
#: (``random.Random(0)``): where both draw 128 bits at the same offset they would get the same id,
#: and the second load into one database would fail on the thread id's unique index. The draws
#: themselves are unchanged, so the corpus is the same one.
_THREAD_ID_SALT = int.from_bytes(hashlib.sha256(b"yuxi-b7-thread-id").digest()[:16], "big")
FIRST_MONTH = (2025, 1)
MONTHS = 18
FACT_MONTHS = (0, 5)
MULTI_MONTHS = ((0, 5), (8, 13))
TOPICS_PER_USER = 3
MENTIONS_PER_TOPIC = 3
_EN_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'\-:]*")


@dataclass(frozen=True)
class CorpusThread:
    index: int
    thread_id: str
    uid: str
    title: str
    created_at: datetime


@dataclass(frozen=True)
class CorpusMessage:
    key: int  # position in created_at order over the whole corpus
    thread: int  # CorpusThread.index
    uid: str
    role: str  # "user" | "assistant"
    content: str
    created_at: datetime


@dataclass(frozen=True)
class Question:
    qid: str
    uid: str
    lang: str
    category: str
    spec: str  # the fact / story / topic it comes from
    question: str
    query: str
    after: str | None
    before: str | None
    answer_messages: tuple[int, ...]  # CorpusMessage.key
    answer_threads: tuple[str, ...]
    answer_words: tuple[str, ...]  # the answer's values: each answer message holds one


@dataclass(frozen=True)
class Corpus:
    seed: int
    user_langs: Mapping[str, str]
    threads: tuple[CorpusThread, ...]
    messages: tuple[CorpusMessage, ...]
    questions: tuple[Question, ...]

    def fingerprint(self) -> str:
        doc = {
            "users": dict(self.user_langs),
            "threads": [asdict(t) for t in self.threads],
            "messages": [asdict(m) for m in self.messages],
            "questions": [asdict(q) for q in self.questions],
        }
        text = json.dumps(doc, ensure_ascii=False, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()


# -- words ----------------------------------------------------------------------------------


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def _shares(word: str, text: str) -> bool:
    if any(is_cjk(ch) for ch in word):
        return _fold(word) in _fold(text)
    have = set(terms(text))
    return all(term in have for term in terms(word))


def shared_fraction(words: Sequence[str], text: str) -> float:
    """Share of ``words`` found in ``text`` (a CJK word as a substring, others as words)."""
    return sum(_shares(w, text) for w in words) / len(words) if words else 0.0


def _fields(template: str) -> list[str]:
    return [name for _, name, _, _ in string.Formatter().parse(template) if name]


# -- one user's plan --------------------------------------------------------------------------


@dataclass
class _Line:
    tmp: int
    role: str
    text: str


@dataclass
class _Plan:
    month: int
    title: str
    lines: list[_Line]


class _UserBuilder:
    def __init__(self, rng: random.Random, lang: Language, uid: str, messages: int) -> None:
        self.rng, self.lang, self.uid, self.target = rng, lang, uid, messages
        self.plans: list[_Plan] = []
        self.distractors: list[_Line] = []
        self.questions: list[dict[str, Any]] = []
        self._tmp = 0
        self._left = {name: rng.sample(pool, len(pool)) for name, pool in lang.pools.items()}

    # values and lines

    def take(self, pool: str) -> str:
        if not self._left[pool]:
            raise ValueError(f"B7 corpus: pool {pool!r} ({self.lang.code}) is exhausted")
        return self._left[pool].pop()

    def render(self, template: str, values: Mapping[str, str]) -> str:
        filled = dict(values)
        for name in _fields(template):
            if name.startswith("any_"):
                filled[name] = self.rng.choice(self.lang.pools[name[4:]])
        return template.format(**filled)

    def line(self, role: str, text: str) -> _Line:
        self._tmp += 1
        return _Line(self._tmp, role, text)

    def exchange(self) -> list[_Line]:
        lang = self.lang
        user = self.render(self.rng.choice(lang.filler_user), {})
        return [
            self.line("user", user),
            self.line("assistant", self.rng.choice(lang.filler_assistant)),
        ]

    def planted_thread(self, month: int, title: str, text: str) -> _Line:
        """A thread of 2-5 exchanges with ``text`` as one user line (answered by an ack)."""
        return self.planted_exchange(month, title, text, None)[0]

    def planted_exchange(
        self, month: int, title: str, text: str, reply: str | None
    ) -> tuple[_Line, _Line]:
        """A thread of 2-5 exchanges, one of them the user's ``text`` and right after it the
        assistant's ``reply`` (None: an ack); returns those two lines."""
        rng = self.rng
        planted = self.line("user", text)
        answer = self.line("assistant", rng.choice(self.lang.acks) if reply is None else reply)
        lines: list[_Line] = []
        count = rng.randint(2, 5)
        at = rng.randrange(count)
        for i in range(count):
            lines += [planted, answer] if i == at else self.exchange()
        self.plans.append(_Plan(month, title, lines))
        return planted, answer

    def query(self, template: str, values: Mapping[str, str]) -> tuple[str, str, list[str]]:
        """(question, query, content words) of a question template."""
        text = template.format(**values)
        stop = self.lang.stop_words
        if self.lang.segmented:
            words = [w for w in text.split("|") if w]
            content = [w for w in words if w not in stop]
            sep = " " if self.rng.random() < 0.5 else ""
            return "".join(words) + "？", sep.join(content), content
        found = [w[:-2] if w.lower().endswith("'s") else w for w in _EN_WORD.findall(text)]
        content = [w for w in found if w.lower() not in stop]
        return text, " ".join(content), content

    def ask(self, category: str, spec: str, question: str, query: str, **label: Any) -> None:
        self.questions.append(
            {"category": category, "spec": spec, "question": question, "query": query, **label}
        )


def _check(ok: bool, what: str) -> None:
    if not ok:
        raise ValueError(f"B7 corpus template: {what}")


def _facts(b: _UserBuilder) -> None:
    rng = b.rng
    for spec in (s for s in b.lang.facts for _ in range(s.repeat)):
        values = {slot: b.take(pool) for slot, pool in spec.slots.items()}
        answers = tuple(values[s] for s in spec.answer)
        text = rng.choice(spec.statements).format(**values)
        line = b.planted_thread(rng.randint(*FACT_MONTHS), spec.title, text)
        for category, templates in (("single", spec.single), ("paraphrase", spec.paraphrase)):
            question, query, words = b.query(rng.choice(templates), values)
            share = shared_fraction(words, text)
            where = f"{spec.key}/{category}: {query!r} vs {text!r} shares {share:.2f}"
            _check(not any(_shares(a, query) for a in answers), f"answer in query, {where}")
            _check(share >= 0.5 if category == "single" else 0 < share <= 0.5, where)
            b.ask(category, spec.key, question, query, lines=[line.tmp], words=answers)
        for template in rng.sample(spec.distractors, min(len(spec.distractors), 3)):
            _check(not set(_fields(template)) & set(spec.answer), f"{spec.key} distractor")
            b.distractors.append(b.line("user", b.render(template, values)))


def _multis(b: _UserBuilder) -> None:
    rng = b.rng
    for spec in b.lang.multis:
        values = {slot: b.take(pool) for slot, pool in spec.slots.items()}
        answers = tuple(values[s] for s in spec.answer)
        lines = []
        for part, (low, high), title in zip(
            (spec.first, spec.second), MULTI_MONTHS, spec.titles, strict=True
        ):
            text = rng.choice(part).format(**values)
            _check(any(_shares(a, text) for a in answers), f"{spec.key}: no answer in {text!r}")
            lines.append(b.planted_thread(rng.randint(low, high), title, text))
        question, query, words = b.query(rng.choice(spec.questions), values)
        for line in lines:
            _check(shared_fraction(words, line.text) > 0, f"{spec.key}: {query!r} vs {line.text!r}")
        b.ask("multi", spec.key, question, query, lines=[ln.tmp for ln in lines], words=answers)


def _month_start(index: int) -> date:
    year, month = FIRST_MONTH
    month += index
    return date(year + (month - 1) // 12, (month - 1) % 12 + 1, 1)


def _temporal(b: _UserBuilder) -> None:
    rng, lang = b.rng, b.lang
    for noun in rng.sample(lang.topics, TOPICS_PER_USER):
        months = sorted(rng.sample(range(MONTHS), MENTIONS_PER_TOPIC))
        events = rng.sample(lang.topic_events, MENTIONS_PER_TOPIC)
        title = rng.choice(lang.filler_titles)
        lines = [
            b.planted_thread(m, title, e.format(noun=noun))
            for m, e in zip(months, events, strict=True)
        ]
        pick = rng.randrange(MENTIONS_PER_TOPIC)
        first, last = _month_start(months[pick]), _month_start(months[pick] + 1)
        window = (pick, first.isoformat(), last.isoformat(), first)
        edge = (
            (0, None, _month_start(months[0] + 1).isoformat(), _month_start(months[0] + 1))
            if rng.random() < 0.5
            else (
                len(months) - 1,
                _month_start(months[-1]).isoformat(),
                None,
                _month_start(months[-1]),
            )
        )
        for kind, (i, after, before, when) in (
            ("window", window),
            ("before" if edge[1] is None else "after", edge),
        ):
            phrase = lang.month_phrase(when.year, when.month)
            question = lang.temporal_questions[kind].format(noun=noun, when=phrase)
            b.ask(
                "temporal",
                f"{noun}/{kind}",
                question,
                noun,
                lines=[lines[i].tmp],
                words=(noun,),
                after=after,
                before=before,
            )


def _user(rng: random.Random, lang: Language, uid: str, messages: int) -> _UserBuilder:
    b = _UserBuilder(rng, lang, uid, messages)
    _facts(b)
    _multis(b)
    _temporal(b)
    plant_replies(b)
    distractors = b.distractors
    have = sum(len(p.lines) for p in b.plans)
    while have < messages or distractors:
        plan = _Plan(rng.randrange(MONTHS), rng.choice(lang.filler_titles), [])
        for _ in range(rng.randint(2, 7)):
            if distractors and rng.random() < 0.35:
                reply = b.line("assistant", rng.choice(lang.filler_assistant))
                lines = [distractors.pop(), reply]
            else:
                lines = b.exchange()
            plan.lines += lines
        have += len(plan.lines)
        b.plans.append(plan)
    return b


def _when(rng: random.Random, month: int) -> datetime:
    start = _month_start(month)
    return datetime(
        start.year,
        start.month,
        rng.randint(2, 26),
        rng.randint(8, 19),
        rng.randrange(60),
        tzinfo=UTC,
    )


def build_corpus(
    *, seed: int = 0, users: int = 8, messages: tuple[int, int] = (300, 800), uid_prefix: str = "b7"
) -> Corpus:
    """``users`` users (even: English, odd: Chinese), each with ``messages`` (a range) or a few
    more; deterministic in ``seed``."""
    if users < 1 or not 0 < messages[0] <= messages[1]:
        raise ValueError("need users >= 1 and 0 < messages[0] <= messages[1]")
    rng = random.Random(seed)
    user_langs: dict[str, str] = {}
    rows: list[tuple[datetime, str, int, int, _Line, str]] = []  # when, uid, plan, seq, line, title
    thread_of: dict[tuple[str, int], tuple[str, str]] = {}  # (uid, plan) -> (thread_id, title)
    raw_questions: list[tuple[str, str, dict[str, Any]]] = []
    for u in range(users):
        code = "en" if u % 2 == 0 else "zh"
        uid = f"{uid_prefix}_s{seed}_{code}{u:02d}"
        user_langs[uid] = code
        b = _user(rng, LANGUAGES[code], uid, rng.randint(*messages))
        for p, plan in enumerate(b.plans):
            at = _when(rng, plan.month)
            thread_id = uuid.UUID(int=rng.getrandbits(128) ^ _THREAD_ID_SALT).hex
            thread_of[(uid, p)] = (thread_id, plan.title)
            for seq, line in enumerate(plan.lines):
                at += timedelta(minutes=rng.randint(1, 5), seconds=rng.randrange(60))
                rows.append((at, uid, p, seq, line, plan.title))
        raw_questions += [(uid, code, q) for q in b.questions]
    rows.sort(key=lambda r: (r[0], r[1], r[2], r[3]))
    thread_index: dict[tuple[str, int], int] = {}
    threads: list[CorpusThread] = []
    messages_out: list[CorpusMessage] = []
    key_of: dict[tuple[str, int], int] = {}  # (uid, line tmp) -> key
    thread_key_of: dict[tuple[str, int], str] = {}  # (uid, line tmp) -> thread_id
    for at, uid, p, _seq, line, _title in rows:
        if (uid, p) not in thread_index:
            thread_id, title = thread_of[(uid, p)]
            thread_index[(uid, p)] = len(threads)
            threads.append(CorpusThread(len(threads), thread_id, uid, title, at))
        key = len(messages_out)
        messages_out.append(
            CorpusMessage(key, thread_index[(uid, p)], uid, line.role, line.text, at)
        )
        key_of[(uid, line.tmp)] = key
        thread_key_of[(uid, line.tmp)] = thread_of[(uid, p)][0]
    questions: list[Question] = []
    for n, (uid, code, q) in enumerate(raw_questions):
        lines = q["lines"]
        questions.append(
            Question(
                qid=f"q{n:04d}",
                uid=uid,
                lang=code,
                category=q["category"],
                spec=q["spec"],
                question=q["question"],
                query=q["query"],
                after=q.get("after"),
                before=q.get("before"),
                answer_messages=tuple(key_of[(uid, t)] for t in lines),
                answer_threads=tuple(dict.fromkeys(thread_key_of[(uid, t)] for t in lines)),
                answer_words=tuple(q["words"]),
            )
        )
    return Corpus(seed, user_langs, tuple(threads), tuple(messages_out), tuple(questions))
