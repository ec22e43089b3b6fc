"""A generated conversation history: users, threads and mixed CJK/English messages, via COPY.

Reusable at any scale::

    with psycopg.connect(url) as conn:
        data = generate(conn, users=5, messages=500, heavy_user_messages=200)

or grown in stages (B4)::

    gen = HistoryGenerator(conn, users=1000, progress=True)
    gen.grow(messages=10_000, heavy_user_messages=1_000)    # 10k rows in total
    gen.grow(messages=90_000, heavy_user_messages=9_000)    # 100k rows in total

The database must be at the current schema (``yuxi.db.migrate.upgrade_sync``). One user is
*heavy* (``<prefix>_heavy``); the rest share the other messages. Every user has memory on.

What the data looks like (so the search terms below mean something):

* threads: ~88 % active chat, 5 % archived, 1 % deleted, 3 % ``agent_call`` source, 3 % persisted
  SubAgent children (linked in ``subagent_threads``) — only the active top-level chat ones are
  visible to the history tools; the heavy user also has one long "big" thread (2 % of its
  messages) for windowed reads;
* messages: ~92 % user/assistant ``text``; the rest ``tool_call`` / ``tool_result`` / system rows
  the tools must never show; 45 % English, 30 % Chinese, 25 % mixed; ~1 % are long (2-8 KB);
* ids (and ``created_at``) increase in generation order and the heavy user's messages are
  shuffled among everyone else's, as in a real shared table;
* :data:`TERMS`: ``common_*`` words occur in many messages, ``rare_*`` needles only in the heavy
  user's three oldest messages, ``crowd_*`` in 2 % of the other users' messages but, for the
  heavy user, only in the same three oldest ones (common across users, rare for this one),
  ``miss_*`` strings nowhere (their characters are not in the vocabulary at all); ``phrase_en``
  is two vocabulary words side by side (by chance only), ``phrase_rare_en`` the two words around
  the needle ("the code word …").
* ``created_at``: 2024-01-01 plus 7 seconds per generated message, in generation order (so 1M
  rows span about 81 days and 10M about 810; the heavy user stops growing at 1M in B4).
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from tqdm import tqdm

__all__ = [
    "CJK_WORDS",
    "EN_WORDS",
    "TERMS",
    "GeneratedData",
    "HistoryGenerator",
    "generate",
    "message_text",
]


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


EN_WORDS = _words(
    "the a to of and in for on with we you it is that this be can will should not all deploy "
    "deployment server client release build test tests pipeline cache database index query "
    "migration schema backup restore latency throughput memory thread message user account "
    "invoice budget meeting schedule tomorrow yesterday friday monday report draft review "
    "feedback design mockup screen button color layout font icon logo brand customer order "
    "shipping warehouse supplier contract price discount quarter revenue forecast plan "
    "roadmap milestone sprint ticket bug fix patch version upgrade python rust golang java "
    "kubernetes docker cluster node pod container volume network proxy gateway token login "
    "password policy audit compliance travel flight hotel train ticket visa passport coffee "
    "lunch dinner recipe garden weekend holiday family birthday gift book movie music guitar "
    "piano running cycling swimming yoga doctor dentist appointment insurance tax refund "
    "apartment rent lease kitchen window heater paint sofa lamp printer laptop phone battery "
    "charger cable keyboard monitor mouse"
)

CJK_WORDS = _words(
    "部署 服务器 客户端 发布 构建 测试 流水线 缓存 数据库 索引 查询 迁移 备份 恢复 延迟 吞吐 "
    "内存 线程 消息 用户 账户 发票 预算 会议 日程 明天 昨天 周五 周一 报告 草稿 评审 反馈 "
    "设计 界面 按钮 颜色 布局 字体 图标 品牌 客户 订单 物流 仓库 供应商 合同 价格 折扣 季度 "
    "收入 预测 计划 路线图 里程碑 迭代 工单 修复 补丁 版本 升级 集群 节点 容器 网络 代理 "
    "网关 登录 密码 策略 审计 合规 出差 航班 酒店 火车 签证 护照 咖啡 午饭 晚饭 菜谱 花园 "
    "周末 假期 家人 生日 礼物 电影 音乐 吉他 钢琴 跑步 骑行 游泳 瑜伽 医生 牙医 预约 保险 "
    "税务 退款 公寓 房租 厨房 窗户 暖气 油漆 沙发 台灯 打印机 电脑 手机 电池 充电器 键盘 "
    "显示器 我们 你 他 这个 那个 已经 需要 可以 应该 不要 还是 因为 所以 但是 然后 如果 "
    "一下 一起 问题 方案 结果 时间 今天"
)

#: Search terms with known frequencies in the generated data (see the module docs).
TERMS: dict[str, str] = {
    "common_en": "deploy",
    "common_cjk": "部署",
    "rare_en": "zebra-needle-4711",
    "rare_cjk": "麒麟犀角",
    "miss_en": "xylophone quartz",
    "miss_cjk": "犇鑫",
    "crowd_en": "marmalade-sky",
    "crowd_cjk": "榴莲酥",
    # Multi-term queries (B4): words of the vocabulary above, each in many messages.
    "common_en_more": "cache server release budget meeting",
    "common_cjk_more": "缓存 服务器 预算",
    # Two words that follow each other only by chance (about 1 message in 1,500).
    "phrase_en": "deploy cache",
    # A phrase only in the heavy user's three oldest messages (its words are in no vocabulary).
    "phrase_rare_en": "code word",
}
#: Share of the *other* users' messages that carry a ``crowd_*`` term (the heavy user's carry
#: it only in its three oldest): common in the table, rare for the heavy user.
CROWD_SHARE = 0.02

_THREAD_KINDS = (
    # (cumulative probability, status, source, subagent child)
    (0.05, "archived", "chat", False),
    (0.06, "deleted", "chat", False),
    (0.09, "active", "agent_call", False),
    (0.12, "active", "chat", True),
    (1.00, "active", "chat", False),
)
_EPOCH = datetime(2024, 1, 1, tzinfo=UTC)


def _sentence_en(rng: random.Random) -> str:
    words = rng.choices(EN_WORDS, k=rng.randint(6, 18))
    words[0] = words[0].capitalize()
    return " ".join(words) + "."


def _sentence_cjk(rng: random.Random) -> str:
    return "".join(rng.choices(CJK_WORDS, k=rng.randint(4, 12))) + "。"


def message_text(rng: random.Random) -> str:
    """One message body: English, Chinese or mixed; about 1 % long (2-8 KB)."""
    kind = rng.random()
    count = rng.randint(20, 60) if rng.random() < 0.01 else rng.randint(1, 4)
    if kind < 0.45:
        parts = [_sentence_en(rng) for _ in range(count)]
        return " ".join(parts)
    if kind < 0.75:
        return "".join(_sentence_cjk(rng) for _ in range(count))
    parts = [_sentence_en(rng) if rng.random() < 0.5 else _sentence_cjk(rng) for _ in range(count)]
    return " ".join(parts)


def _title(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return " ".join(rng.choices(EN_WORDS[20:], k=rng.randint(2, 5))).capitalize()
    return "关于" + "".join(rng.choices(CJK_WORDS, k=rng.randint(1, 3)))


@dataclass
class _Thread:
    id: int
    thread_id: str
    uid: str
    visible: bool


@dataclass
class GeneratedData:
    """What a test or benchmark needs to query the generated history."""

    heavy_uid: str
    uids: list[str]
    big_thread_id: str
    heavy_visible_thread_ids: list[str]
    total_messages: int
    heavy_messages: int
    anchor_message_id: int | None
    terms: dict[str, str] = field(default_factory=lambda: dict(TERMS))


def reserve_ids(cur: psycopg.Cursor[Any], table: str, n: int) -> int:
    """Reserve ``n`` consecutive ids of ``table``'s serial; return the first."""
    row = cur.execute("SELECT pg_get_serial_sequence(%s, 'id')", (table,)).fetchone()
    assert row is not None and row[0]
    seq = row[0]
    last = cur.execute("SELECT setval(%s, nextval(%s) + %s - 1)", (seq, seq, n)).fetchone()
    assert last is not None
    return int(last[0]) - n + 1


class HistoryGenerator:
    """Creates users once, then grows their history by COPY in as many stages as wanted."""

    BIG_THREAD_SHARE = 0.02
    HEAVY_THREAD_SIZE = 100
    LIGHT_THREAD_SIZE = 25
    COPY_PROGRESS_EVERY = 5_000

    def __init__(
        self,
        conn: psycopg.Connection[Any],
        *,
        users: int,
        seed: int = 0,
        uid_prefix: str = "bench",
        progress: bool = False,
    ) -> None:
        if users < 1:
            raise ValueError("users must be >= 1 (the heavy user)")
        self.conn = conn
        self.rng = random.Random(seed)
        self.progress = progress
        self.heavy_uid = f"{uid_prefix}_heavy"
        self.light_uids = [f"{uid_prefix}_u{i:05d}" for i in range(users - 1)]
        self.threads: dict[str, list[_Thread]] = {}
        self.big_thread: _Thread | None = None
        self.total_messages = 0
        self.heavy_messages = 0
        self._clock = 0
        self._needles_planted = False
        self._needle_count = 0
        self._users_created = False

    @property
    def uids(self) -> list[str]:
        return [self.heavy_uid, *self.light_uids]

    # -- users ----------------------------------------------------------------------------

    def create_users(self) -> None:
        if self._users_created:
            return
        with self.conn.cursor() as cur:
            with cur.copy("COPY users (uid, name) FROM STDIN") as copy:
                for uid in self.uids:
                    copy.write_row((uid, f"bench user {uid}"))
            with cur.copy("COPY user_config (uid, enable_memory) FROM STDIN") as copy:
                for uid in self.uids:
                    copy.write_row((uid, True))
        self.conn.commit()
        self._users_created = True

    # -- threads --------------------------------------------------------------------------

    def _new_threads(self, owners: list[str], *, big_for: str | None = None) -> list[_Thread]:
        """Insert one thread per entry of ``owners`` (plus the big thread) and return them."""
        rng = self.rng
        specs: list[tuple[str, str, str, bool]] = []  # uid, status, source, child
        if big_for is not None:
            specs.append((big_for, "active", "chat", False))
        for uid in owners:
            draw = rng.random()
            for limit, status, source, child in _THREAD_KINDS:
                if draw < limit:
                    specs.append((uid, status, source, child))
                    break
        if not specs:
            return []
        created: list[_Thread] = []
        links: list[tuple[int, int]] = []
        now = datetime.now(UTC)
        with self.conn.cursor() as cur:
            first = reserve_ids(cur, "conversations", len(specs))
            with cur.copy(
                "COPY conversations (id, thread_id, uid, title, status, source, created_at, "
                "updated_at, deleted_at) FROM STDIN"
            ) as copy:
                for offset, (uid, status, source, child) in enumerate(specs):
                    pk = first + offset
                    thread = _Thread(
                        pk,
                        uuid.UUID(int=rng.getrandbits(128)).hex,
                        uid,
                        status == "active" and source == "chat" and not child,
                    )
                    if child:
                        parents = [t for t in self.threads.get(uid, []) if t.visible]
                        parents += [t for t in created if t.uid == uid and t.visible]
                        if parents:
                            links.append((rng.choice(parents).id, pk))
                        else:  # nothing to hang it under: an ordinary visible thread
                            thread.visible = True
                    deleted_at = now if status == "deleted" else None  # migration 0011's rule
                    copy.write_row(
                        (
                            pk,
                            thread.thread_id,
                            uid,
                            _title(rng),
                            status,
                            source,
                            now,
                            now,
                            deleted_at,
                        )
                    )
                    created.append(thread)
            if links:
                with cur.copy(
                    "COPY subagent_threads (parent_conversation_id, child_conversation_id) "
                    "FROM STDIN"
                ) as copy:
                    for link in links:
                        copy.write_row(link)
        for thread in created:
            self.threads.setdefault(thread.uid, []).append(thread)
        if big_for is not None:
            self.big_thread = created[0]
        return created

    # -- messages -------------------------------------------------------------------------

    def grow(self, *, messages: int, heavy_user_messages: int, analyze: bool = True) -> None:
        """Add ``messages`` messages, ``heavy_user_messages`` of them the heavy user's."""
        if not 0 <= heavy_user_messages <= messages:
            raise ValueError("need 0 <= heavy_user_messages <= messages")
        light_n = messages - heavy_user_messages
        if light_n and not self.light_uids:
            raise ValueError("only the heavy user exists: messages must equal heavy_user_messages")
        self.create_users()
        rng = self.rng
        heavy_threads = self._new_threads(
            [self.heavy_uid] * max(1, heavy_user_messages // self.HEAVY_THREAD_SIZE),
            big_for=self.heavy_uid if self.big_thread is None else None,
        )
        heavy_pool = [t for t in heavy_threads if t is not self.big_thread] or heavy_threads
        light_pool: list[_Thread] = []
        if light_n:
            owners = [
                rng.choice(self.light_uids)
                for _ in range(max(1, light_n // self.LIGHT_THREAD_SIZE))
            ]
            light_pool = self._new_threads(owners)
        owners_flags = [True] * heavy_user_messages + [False] * light_n
        rng.shuffle(owners_flags)
        big = self.big_thread
        bar = tqdm(
            total=messages,
            unit="msg",
            unit_scale=True,
            desc=f"COPY messages (+{messages:,})",
            disable=not self.progress,
            leave=False,
        )
        pending = 0
        with (
            self.conn.cursor() as cur,
            cur.copy(
                "COPY messages (conversation_id, uid, role, message_type, content, created_at) "
                "FROM STDIN"
            ) as copy,
        ):
            for heavy in owners_flags:
                if heavy:
                    if not self._needles_planted and big is not None:
                        row = self._needle_row(big)
                    else:
                        thread = (
                            big
                            if big is not None and rng.random() < self.BIG_THREAD_SHARE
                            else rng.choice(heavy_pool)
                        )
                        row = self._message_row(thread)
                else:
                    row = self._message_row(rng.choice(light_pool))
                    if rng.random() < CROWD_SHARE:
                        term = TERMS["crowd_en" if rng.random() < 0.5 else "crowd_cjk"]
                        row = (*row[:4], f"{row[4]} {term}", *row[5:])
                copy.write_row(row)
                pending += 1
                if pending >= self.COPY_PROGRESS_EVERY:
                    bar.update(pending)
                    pending = 0
        bar.update(pending)
        bar.close()
        self.conn.commit()
        self.total_messages += messages
        self.heavy_messages += heavy_user_messages
        if analyze:
            with self.conn.cursor() as cur:
                cur.execute("ANALYZE messages")
                cur.execute("ANALYZE conversations")
            self.conn.commit()

    def _tick(self) -> datetime:
        self._clock += 1
        return _EPOCH + timedelta(seconds=self._clock * 7)

    def _message_row(self, thread: _Thread) -> tuple[Any, ...]:
        rng = self.rng
        draw = rng.random()
        if draw < 0.04:
            role, mtype = "tool", "tool_result"
        elif draw < 0.07:
            role, mtype = "assistant", "tool_call"
        elif draw < 0.08:
            role, mtype = "system", "text"
        else:
            role, mtype = ("user" if rng.random() < 0.5 else "assistant"), "text"
        return (thread.id, thread.uid, role, mtype, message_text(rng), self._tick())

    def _needle_row(self, big: _Thread) -> tuple[Any, ...]:
        """The heavy user's three oldest messages carry the rare needles (visible ones)."""
        self._needle_count += 1
        if self._needle_count >= 3:
            self._needles_planted = True
        text = (
            f"{message_text(self.rng)} Remember the code word {TERMS['rare_en']}, "
            f"暗号是{TERMS['rare_cjk']}。 {TERMS['crowd_en']} {TERMS['crowd_cjk']}"
        )
        return (big.id, big.uid, "user", "text", text, self._tick())

    # -- what callers need ----------------------------------------------------------------

    def anchor_message_id(self) -> int | None:
        """A visible message in the middle of the big thread (for anchored reads)."""
        if self.big_thread is None:
            return None
        with self.conn.cursor() as cur:
            count_row = cur.execute(
                "SELECT count(*) FROM messages WHERE conversation_id = %s "
                "AND role IN ('user', 'assistant') AND message_type = 'text'",
                (self.big_thread.id,),
            ).fetchone()
            count = int(count_row[0]) if count_row else 0
            if count == 0:
                return None
            row = cur.execute(
                "SELECT id FROM messages WHERE conversation_id = %s "
                "AND role IN ('user', 'assistant') AND message_type = 'text' "
                "ORDER BY id OFFSET %s LIMIT 1",
                (self.big_thread.id, count // 2),
            ).fetchone()
        self.conn.commit()
        return int(row[0]) if row else None

    def data(self) -> GeneratedData:
        assert self.big_thread is not None, "grow() first"
        return GeneratedData(
            heavy_uid=self.heavy_uid,
            uids=self.uids,
            big_thread_id=self.big_thread.thread_id,
            heavy_visible_thread_ids=[
                t.thread_id for t in self.threads.get(self.heavy_uid, []) if t.visible
            ],
            total_messages=self.total_messages,
            heavy_messages=self.heavy_messages,
            anchor_message_id=self.anchor_message_id(),
        )


def generate(
    conn: psycopg.Connection[Any],
    *,
    users: int,
    messages: int,
    heavy_user_messages: int,
    seed: int = 0,
    uid_prefix: str = "bench",
    progress: bool = False,
) -> GeneratedData:
    """Create ``users`` users and ``messages`` messages (``heavy_user_messages`` the heavy's)."""
    gen = HistoryGenerator(conn, users=users, seed=seed, uid_prefix=uid_prefix, progress=progress)
    gen.grow(messages=messages, heavy_user_messages=heavy_user_messages)
    return gen.data()
