"""Segments: a long message is cut into pieces of bounded UTF-8 size that concatenate back
to it exactly, never inside a character, preferring sentence boundaries."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cairn.ingestion.segment import cut_segments


@given(st.text(max_size=2000), st.integers(min_value=4, max_value=300))
def test_segments_reassemble_and_fit(text: str, max_bytes: int) -> None:
    pieces = cut_segments(text, max_bytes)
    assert "".join(pieces) == text
    assert all(0 < len(piece.encode()) <= max_bytes for piece in pieces)


def test_cuts_prefer_sentence_ends() -> None:
    text = "First sentence here. " * 10 + "中文句子在这里。" * 20
    pieces = cut_segments(text, 120)
    assert len(pieces) > 1
    assert all(piece.endswith((". ", "。")) for piece in pieces[:-1])


def test_short_text_is_one_piece() -> None:
    assert cut_segments("hello", 2400) == ["hello"]


def test_cap_too_small_is_refused() -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        cut_segments("hello", 3)
