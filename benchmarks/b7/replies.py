"""B7's ``reply`` questions: the answer is the assistant's reply to the user's own question.

The reply facts of both languages live here (:data:`EN_REPLIES`, :data:`ZH_REPLIES`; their
answers' pools in :mod:`benchmarks.b7.en` / :mod:`benchmarks.b7.zh`). For every
:class:`~benchmarks.b7.specs.ReplySpec` of the language, once per user: one exchange in a thread
of the first six months, the user's line (the *ask*, holding the topic's words) and, right after
it, the assistant's line (the *reply*, holding the answer). Two questions asked later (two
different templates) are labelled with the reply line only. Each question's query shares a term
with the ask and none with the reply: a word search reaches the reply only as the ask's
neighbour. "None" is judged the way the searches see words:

* a query word holding CJK characters: neither it nor any of its characters' bigrams (query
  words spaced or run together) occurs in the reply — the product also stores every single
  character, so a one-character word must not occur in the reply at all;
* any other word: no word of the reply begins with it or with the reply word, and none shares
  its first five letters (a conservative stand-in for Snowball English stems: ``suggest`` /
  ``suggested``, ``name`` / ``named`` clash).

Three distractor lines per fact share the ask's words (never the answer) and go to other
threads, as the facts' distractors do.
"""

from __future__ import annotations

import random
import string
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from benchmarks.b7.specs import Language, ReplySpec
from benchmarks.b7.terms import is_cjk, terms

__all__ = [
    "EN_REPLIES",
    "REPLY_MONTHS",
    "ZH_REPLIES",
    "ReplyBuilder",
    "plant_replies",
    "reply_clashes",
]

REPLY_MONTHS = (0, 5)
QUESTIONS_PER_REPLY = 2

# -- the facts (answers from pools no ``any_`` field draws from: see en.py / zh.py) ----------

EN_REPLIES = (
    ReplySpec(
        "pet_name",
        {"kind": "pet_kind", "pet": "pet"},
        ("pet",),
        (
            "Can you suggest a name for my new {kind}? Nothing too fancy.",
            "We're getting a {kind} next week and I'm stuck on a name, any suggestions?",
        ),
        (
            "How about {pet}? Short, friendly and easy to call across a park.",
            "I'd go with {pet}: two syllables, and it sounds cheerful when you shout it.",
        ),
        (
            "What name did you suggest for my {kind}?",
            "Remind me of the name you came up with for the new {kind}.",
        ),
        (
            "My neighbour's {kind} has the silliest name, I can never remember it.",
            "The vet says a young {kind} needs its shots before the first walk.",
            "Naming the new project at work took a whole meeting, unbelievable.",
        ),
        "Pet names",
    ),
    ReplySpec(
        "flight_book",
        {"dest": "dest", "novel": "novel"},
        ("novel",),
        (
            "Which book should I take on my flight to {dest}? It's about twelve hours.",
            "I need something to read on the long flight to {dest}, what book would you pack?",
        ),
        (
            "I would take {novel}: it lasts the whole trip and you won't want to put it down.",
            "{novel}, without a doubt. Gripping enough to make the hours vanish.",
        ),
        (
            "Which book did you recommend for the {dest} flight?",
            "What reading did you suggest for my long plane ride to {dest}?",
        ),
        (
            "A colleague's flight to {dest} was delayed, he read the whole in-flight magazine.",
            "I can never read on planes, I just fall asleep.",
            "My book club picked something terribly long this month.",
        ),
        "Reading list",
    ),
    ReplySpec(
        "birthday_gift",
        {"rel": "relative", "gift": "gift"},
        ("gift",),
        (
            "My {rel} turns forty next month, what could I get as a birthday present?",
            "I need a birthday present for my {rel}, something under a hundred euros. Ideas?",
        ),
        (
            "A {gift} would be lovely: personal, useful, and not too pricey.",
            "Get a {gift}; it feels thoughtful and will actually be used.",
        ),
        (
            "What birthday present did you suggest for my {rel}?",
            "What gift idea did you give me for my {rel}'s fortieth?",
        ),
        (
            "My {rel} hates surprises, so birthdays are always tricky.",
            "I still haven't thanked anyone for my own birthday presents.",
            "Gift wrapping is my least favourite chore.",
        ),
        "Birthday present",
    ),
    ReplySpec(
        "wine",
        {"roast": "roast", "wine": "wine"},
        ("wine",),
        (
            "I'm cooking {roast} for six on Saturday, which wine should I serve with it?",
            "Guests are coming for {roast} on Saturday; what wine goes with that?",
        ),
        (
            "Go for a {wine}, slightly chilled; it will carry the sauce nicely.",
            "A {wine} is the safe choice: bright, not too heavy, and it flatters the sauce.",
        ),
        (
            "Which wine did you pick for my {roast} dinner?",
            "What should I pour with the {roast}?",
        ),
        (
            "We had {roast} at a restaurant last week, way too salty.",
            "I don't know anything about wine, I just pick the label I like.",
            "Dinner guests on Saturday means cleaning the whole flat on Friday.",
        ),
        "Dinner party",
    ),
    ReplySpec(
        "bathroom_plant",
        {"plant": "plant"},
        ("plant",),
        (
            "Which plant can survive in a bathroom with no window? It's pretty dark in there.",
            "I want something green for our windowless bathroom, what would survive there?",
        ),
        (
            "Try a {plant}: nearly impossible to kill, just water it every two weeks.",
            "A {plant} is your best bet; it tolerates shade and forgives missed watering.",
        ),
        (
            "Which plant did you recommend for the dark bathroom?",
            "What green thing survives in my windowless bathroom?",
        ),
        (
            "The bathroom fan is broken again, it's so damp in there.",
            "My office plant died while I was on holiday.",
            "Dark winter mornings make it so hard to get up.",
        ),
        "Houseplants",
    ),
)

ZH_REPLIES = (
    ReplySpec(
        "pet_name",
        {"kind": "pet_kind", "pet": "pet"},
        ("pet",),
        (
            "我下周要接一只{kind}回家，帮我想个名字吧，别太复杂。",
            "新养了一只{kind}，一直想不好起什么名字，你有建议吗？",
        ),
        ("叫{pet}怎么样？两个字，好记又顺口。", "我觉得{pet}挺合适，听着可爱，喊出来也响亮。"),
        (
            "你|给|我|的|{kind}|起|的|名字|是|什么",
            "上次|你|帮|我|的|{kind}|想|的|名字|是|哪个",
        ),
        (
            "邻居家的{kind}名字特别好笑，我老记不住。",
            "兽医说{kind}打完疫苗才能出门。",
            "公司新项目起名字开了一整个会，离谱。",
        ),
        "起名",
    ),
    ReplySpec(
        "flight_book",
        {"dest": "dest", "novel": "novel"},
        ("novel",),
        (
            "下个月飞{dest}，路上十几个小时，带哪本书好？",
            "去{dest}的航班很长，想带本书在飞机上看，你推荐哪本？",
        ),
        (
            "带{novel}吧，够你看完全程，一翻开就停不下来。",
            "{novel}最合适，篇幅正好，故事抓人，时间一下就过去了。",
        ),
        (
            "你|推荐|我|飞|{dest}|路上|读|哪本|书",
            "去|{dest}|的|航班|上|你|建议|读|什么|书",
        ),
        (
            "同事飞{dest}的航班延误了，他把机上杂志都看完了。",
            "我在飞机上根本看不进书，一上去就睡。",
            "读书会这个月选了本特别厚的书。",
        ),
        "旅途读物",
    ),
    ReplySpec(
        "birthday_gift",
        {"rel": "relative", "gift": "gift"},
        ("gift",),
        (
            "我{rel}下个月过四十岁生日，送什么礼物好？",
            "想给{rel}挑个生日礼物，预算几百块，有什么主意？",
        ),
        ("送{gift}吧，有心意又实用，价钱也不夸张。", "{gift}就很好，用得上，还显得花了心思。"),
        (
            "你|建议|我|给|{rel}|买|什么|生日|礼物",
            "你|帮|我|给|{rel}|挑|的|生日|礼物|是|什么",
        ),
        (
            "我{rel}不喜欢惊喜，每年生日都很难办。",
            "我自己的生日礼物还没来得及道谢。",
            "包礼物是我最不擅长的事。",
        ),
        "生日礼物",
    ),
    ReplySpec(
        "wine",
        {"roast": "roast", "wine": "wine"},
        ("wine",),
        ("周六请朋友来家里吃{roast}，配什么酒好？", "我打算做{roast}招待客人，该配哪种酒？"),
        (
            "开一瓶{wine}，稍微冰一下，跟酱汁很搭。",
            "{wine}最稳妥，果香足，单宁柔和，不会抢菜的味道。",
        ),
        ("你|说|过|{roast}|该|配|什么|酒", "招待|朋友|吃|{roast}|那天|喝|什么"),
        (
            "上周在餐厅吃了{roast}，太咸了。",
            "我对酒一窍不通，都是看酒标顺眼就买。",
            "周六请朋友吃饭，周五就得把家里打扫一遍。",
        ),
        "请客",
    ),
    ReplySpec(
        "bathroom_plant",
        {"plant": "plant"},
        ("plant",),
        ("卫生间没有窗户，光线很暗，养什么植物能活？", "想在不透光的卫生间放点绿植，什么能养活？"),
        (
            "试试{plant}，几乎不会死，偶尔浇点水就行。",
            "{plant}最省心，耐阴，半个月浇一次水都没问题。",
        ),
        ("你|推荐|放|在|卫生间|的|植物", "我|那个|暗|卫生间|适合|养|什么"),
        (
            "卫生间的排风扇又坏了，里面特别潮。",
            "我放办公室的植物趁我休假的时候死了。",
            "冬天早上天那么暗，起床太难了。",
        ),
        "养花",
    ),
)


class ReplyBuilder(Protocol):
    """What :func:`plant_replies` needs of the corpus's per-user builder."""

    rng: random.Random
    lang: Language
    distractors: list[Any]

    def take(self, pool: str) -> str: ...
    def render(self, template: str, values: Mapping[str, str]) -> str: ...
    def line(self, role: str, text: str) -> Any: ...
    def query(self, template: str, values: Mapping[str, str]) -> tuple[str, str, list[str]]: ...
    def ask(self, category: str, spec: str, question: str, query: str, **label: Any) -> None: ...
    def planted_exchange(self, month: int, title: str, ask: str, reply: str) -> tuple[Any, Any]: ...


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def _stem_clash(a: str, b: str) -> bool:
    short, long = sorted((a, b), key=len)
    return (len(short) >= 3 and long.startswith(short)) or (
        len(short) >= 5 and short[:5] == long[:5]
    )


def reply_clashes(words: Sequence[str], text: str) -> list[str]:
    """The query words (content words of one question) that a word search could match in
    ``text`` (see the module's rules); [] when none can."""
    have = set(terms(text))
    found: list[str] = []
    for word in words:
        if any(is_cjk(ch) for ch in word):
            if _fold(word) in _fold(text) or set(terms(word)) & have:
                found.append(word)
        elif any(_stem_clash(t, h) for t in terms(word) for h in have):
            found.append(word)
    cjk = [w for w in words if any(is_cjk(ch) for ch in w)]
    if cjk and set(terms("".join(cjk))) & have:  # a run-together query's bigrams across words
        found.append("".join(cjk))
    return found


def _shares_a_term(words: Sequence[str], text: str) -> bool:
    return bool(set(terms(" ".join(words))) & set(terms(text)))


def _check(ok: bool, what: str) -> None:
    if not ok:
        raise ValueError(f"B7 corpus template: {what}")


def plant_replies(b: ReplyBuilder) -> None:
    rng = b.rng
    for spec in b.lang.replies:
        values = {slot: b.take(pool) for slot, pool in spec.slots.items()}
        answers = tuple(values[s] for s in spec.answer)
        ask_text = b.render(rng.choice(spec.asks), values)
        reply_text = b.render(rng.choice(spec.replies), values)
        _check(
            all(a in reply_text and a not in ask_text for a in answers),
            f"{spec.key}: the answer belongs in the reply only: {ask_text!r} / {reply_text!r}",
        )
        month = rng.randint(*REPLY_MONTHS)
        _, reply = b.planted_exchange(month, spec.title, ask_text, reply_text)
        for template in rng.sample(spec.questions, min(len(spec.questions), QUESTIONS_PER_REPLY)):
            question, query, words = b.query(template, values)
            where = f"{spec.key}/reply: {query!r} vs {ask_text!r} / {reply_text!r}"
            _check(not any(_fold(a) in _fold(query) for a in answers), f"answer in query, {where}")
            _check(_shares_a_term(words, ask_text), f"no word of the ask, {where}")
            clashes = reply_clashes(words, reply_text)
            _check(not clashes, f"{clashes} in the reply, {where}")
            b.ask("reply", spec.key, question, query, lines=[reply.tmp], words=answers)
        for template in rng.sample(spec.distractors, min(len(spec.distractors), 3)):
            fields = {name for _, name, _, _ in string.Formatter().parse(template) if name}
            _check(not fields & set(spec.answer), f"{spec.key} distractor")
            b.distractors.append(b.line("user", b.render(template, values)))
