"""Cutting long messages into segments of bounded UTF-8 size.

Each segment becomes its own evidence row, so every part of a long message stays indexed,
embedded, extracted and recallable, and a claim cites a verbatim span of one segment. The
segments concatenate back to the message exactly (tests/ingestion/test_segment.py).
"""

from __future__ import annotations

from typing import Final

__all__ = ["cut_segments"]

# Where to prefer a cut, best first: after a paragraph, a sentence end, a clause, a space.
_BREAKS: Final = (
    ("\n\n",),
    ("\n", ". ", "! ", "? ", "。", "！", "？", "；"),
    ("; ", ", ", "，", "、", ": "),
    (" ", "\t"),
)
# A preferred break is taken only in the last part of the window, so no segment is tiny.
_MIN_FILL: Final = 0.6


def _fits(text: str, max_bytes: int) -> int:
    """Length (in characters) of the longest prefix of ``text`` within ``max_bytes``."""
    encoded = text.encode()
    if len(encoded) <= max_bytes:
        return len(text)
    # Never cut inside a character: back off to the start of the character at the cap.
    cut = max_bytes
    while cut > 0 and (encoded[cut] & 0xC0) == 0x80:
        cut -= 1
    return len(encoded[:cut].decode())


def cut_segments(text: str, max_bytes: int) -> list[str]:
    """``text`` as pieces of at most ``max_bytes`` UTF-8 bytes each, in order.

    Cuts fall after a paragraph, sentence, clause or word boundary in the last 40% of each
    window when there is one, else at the byte cap (between characters).
    """
    if max_bytes < 4:
        raise ValueError("max_bytes must leave room for one character (4 bytes)")
    pieces: list[str] = []
    rest = text
    while rest:
        limit = _fits(rest, max_bytes)
        if limit == len(rest):
            pieces.append(rest)
            break
        window = rest[:limit]
        cut = limit
        floor = int(limit * _MIN_FILL)
        for marks in _BREAKS:
            best = max((window.rfind(mark) + len(mark) for mark in marks), default=-1)
            if best > floor:
                cut = best
                break
        pieces.append(rest[:cut])
        rest = rest[cut:]
    return pieces
