"""truncate_utf8: byte budgets cut on a code point boundary, with a marker, never over budget."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from yuxi.utils.string_utils import (
    TRUNCATION_MARKER,
    is_valid_text,
    truncate_utf8,
    utf8_len,
)

MARKER_LEN = len(TRUNCATION_MARKER.encode("utf-8"))


def _check_invariants(value: str, max_bytes: int, text: str, truncated: bool) -> None:
    encoded = text.encode("utf-8")
    assert len(encoded) <= max_bytes
    assert encoded.decode("utf-8") == text
    if "\ufffd" not in value:
        assert "\ufffd" not in text.replace(TRUNCATION_MARKER, "")
    fits = len(value.encode("utf-8")) <= max_bytes
    assert truncated is (not fits)
    if not truncated:
        assert text == value
    elif text:
        assert text.endswith(TRUNCATION_MARKER)
        kept = text[: -len(TRUNCATION_MARKER)]
        assert value.startswith(kept)
        # Greedy: one more code point would not have fit.
        if len(kept) < len(value):
            assert utf8_len(value[: len(kept) + 1]) + MARKER_LEN > max_bytes
    else:
        assert max_bytes < MARKER_LEN


# --- boundary cases -------------------------------------------------------------------------


def test_marker_is_fourteen_bytes() -> None:
    assert MARKER_LEN == 14


def test_value_that_fits_exactly_is_unchanged() -> None:
    value = "a" * 20
    assert truncate_utf8(value, 20) == (value, False)


def test_value_one_byte_over_is_truncated_with_marker() -> None:
    value = "a" * 21
    text, truncated = truncate_utf8(value, 20)
    assert truncated
    assert text == "a" * (20 - MARKER_LEN) + TRUNCATION_MARKER
    assert utf8_len(text) == 20


def test_empty_value_fits_zero_bytes() -> None:
    assert truncate_utf8("", 0) == ("", False)


def test_zero_budget_with_text_returns_empty_truncated() -> None:
    assert truncate_utf8("x", 0) == ("", True)


def test_marker_that_does_not_fit_returns_empty() -> None:
    assert truncate_utf8("a" * 100, MARKER_LEN - 1) == ("", True)


def test_marker_that_fits_exactly_returns_only_marker() -> None:
    assert truncate_utf8("a" * 100, MARKER_LEN) == (TRUNCATION_MARKER, True)


def test_text_equal_to_marker_length_that_fits_is_not_marked() -> None:
    value = "b" * MARKER_LEN
    assert truncate_utf8(value, MARKER_LEN) == (value, False)


@pytest.mark.parametrize("extra", [0, 1, 2])
def test_cjk_is_never_split(extra: int) -> None:
    value = "记忆" * 50  # 3 bytes each
    max_bytes = MARKER_LEN + 9 + extra  # room for 3 characters plus 0..2 stray bytes
    text, truncated = truncate_utf8(value, max_bytes)
    assert truncated
    assert text == "记忆记" + TRUNCATION_MARKER
    _check_invariants(value, max_bytes, text, truncated)


@pytest.mark.parametrize("extra", [0, 1, 2, 3])
def test_emoji_is_never_split(extra: int) -> None:
    value = "😀🎉" * 20  # 4 bytes each
    max_bytes = MARKER_LEN + 8 + extra
    text, truncated = truncate_utf8(value, max_bytes)
    assert truncated
    assert text == "😀🎉" + TRUNCATION_MARKER
    _check_invariants(value, max_bytes, text, truncated)


def test_cjk_fitting_exactly_is_unchanged() -> None:
    value = "用户记忆"
    assert truncate_utf8(value, 12) == (value, False)
    text, truncated = truncate_utf8(value, 11)
    assert truncated
    assert utf8_len(text) <= 11


def test_combining_marks_yield_valid_prefix() -> None:
    value = "e\u0301" * 30  # 'e' + COMBINING ACUTE ACCENT (2 bytes)
    for max_bytes in range(MARKER_LEN, MARKER_LEN + 12):
        text, truncated = truncate_utf8(value, max_bytes)
        _check_invariants(value, max_bytes, text, truncated)


def test_mixed_widths_every_budget() -> None:
    value = "a记😀é\u0301b" * 5
    for max_bytes in range(0, utf8_len(value) + 2):
        text, truncated = truncate_utf8(value, max_bytes)
        _check_invariants(value, max_bytes, text, truncated)


def test_existing_replacement_char_is_kept_not_introduced() -> None:
    value = "\ufffd" * 10
    text, truncated = truncate_utf8(value, 20)
    _check_invariants(value, 20, text, truncated)


def test_large_input_is_fast_and_correct() -> None:
    value = "记" * 2_000_000
    text, truncated = truncate_utf8(value, 24 * 1024)
    assert truncated
    assert utf8_len(text) <= 24 * 1024
    assert utf8_len(text) > 24 * 1024 - 3 - MARKER_LEN


def test_negative_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        truncate_utf8("abc", -1)


def test_non_int_budget_is_refused() -> None:
    with pytest.raises(TypeError):
        truncate_utf8("abc", True)


def test_lone_surrogate_is_refused_with_clear_message() -> None:
    with pytest.raises(ValueError, match="lone surrogate"):
        truncate_utf8("ok\ud800", 100)
    with pytest.raises(ValueError, match="lone surrogate"):
        truncate_utf8("ok\udfff" * 100, 5)


def test_utf8_len() -> None:
    assert utf8_len("") == 0
    assert utf8_len("a记😀") == 8
    with pytest.raises(ValueError):
        utf8_len("\ud83d")


def test_is_valid_text() -> None:
    assert is_valid_text("记忆 😀")
    assert is_valid_text("")
    assert not is_valid_text("a\x00b")
    assert not is_valid_text("a\udc00")


# --- properties ---------------------------------------------------------------------------

_any_text = st.text(alphabet=st.characters(codec="utf-8"), max_size=200)
_wide_text = st.text(
    alphabet=st.one_of(
        st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF),  # CJK, 3 bytes
        st.characters(min_codepoint=0x1F300, max_codepoint=0x1FAFF),  # emoji, 4 bytes
        st.characters(min_codepoint=0x0300, max_codepoint=0x036F),  # combining marks, 2 bytes
        st.sampled_from("ab \n"),
    ),
    max_size=200,
)


@settings(max_examples=400)
@given(value=_any_text, max_bytes=st.integers(min_value=0, max_value=400))
def test_property_any_text(value: str, max_bytes: int) -> None:
    text, truncated = truncate_utf8(value, max_bytes)
    _check_invariants(value, max_bytes, text, truncated)


@settings(max_examples=400)
@given(value=_wide_text, max_bytes=st.integers(min_value=0, max_value=900))
def test_property_cjk_emoji_text(value: str, max_bytes: int) -> None:
    text, truncated = truncate_utf8(value, max_bytes)
    _check_invariants(value, max_bytes, text, truncated)


@given(value=_wide_text)
def test_property_budget_equal_to_length_never_truncates(value: str) -> None:
    n = utf8_len(value)
    assert truncate_utf8(value, n) == (value, False)
    if n:
        text, truncated = truncate_utf8(value, n - 1)
        assert truncated
        assert utf8_len(text) <= n - 1


@given(value=_any_text)
def test_property_is_valid_text_matches_strict_encoding(value: str) -> None:
    assert is_valid_text(value) is ("\x00" not in value)
