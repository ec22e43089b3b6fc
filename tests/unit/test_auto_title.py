"""A thread's automatic title: the first non-blank line of its first message, at most
``AUTO_TITLE_MAX_CHARS`` characters, cut on a character boundary with an ellipsis."""

from __future__ import annotations

from yuxi.limits import AUTO_TITLE_MAX_CHARS
from yuxi.services.chat import auto_title


def test_a_short_first_line_is_the_title() -> None:
    assert auto_title("\n  你好，世界  \nsecond line") == "你好，世界"


def test_the_boundary_in_characters_with_cjk() -> None:
    at_limit = "记" * AUTO_TITLE_MAX_CHARS
    assert auto_title(at_limit) == at_limit
    over = auto_title("忆" * (AUTO_TITLE_MAX_CHARS + 1))
    assert over == "忆" * (AUTO_TITLE_MAX_CHARS - 1) + "…"
    assert len(over) == AUTO_TITLE_MAX_CHARS


def test_a_5000_character_message_gives_a_short_title() -> None:
    title = auto_title("word " * 1000)
    assert len(title) <= AUTO_TITLE_MAX_CHARS and title.endswith("word…")
    emoji = auto_title("🙂" * 5000)  # astral characters are never split
    assert emoji == "🙂" * (AUTO_TITLE_MAX_CHARS - 1) + "…"
    assert emoji.encode("utf-8").decode("utf-8") == emoji
