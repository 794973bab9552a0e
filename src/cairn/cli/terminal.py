"""Stored text on a terminal: every character that could act on it, or hide from the reader,
shown as a visible escape.

rich does not do this. ``rich.text.Text`` (and so every str a table or ``print`` renders)
removes only BEL, BS, VT, FF and CR (``rich.control.strip_control_codes``); ESC, the C1
controls (CSI U+009B, OSC U+009D), NUL, DEL and bidi controls reach the terminal, and
dropping BEL from ``ESC ] 0 ; title BEL`` leaves an unterminated OSC that swallows what
follows. So every stored string a human-readable command prints goes through
:func:`visible` (or :func:`shown`, the same as a ``Text``) first; the characters are the
table of ``cairn.domain.characters``: a control, bidi, zero-width, tag or variation
selector character becomes its Python escape (ESC → ``\\x1b``, RLO → ``\\u202e``, a line
break → ``\\n``), so one stored value stays on its line and the operator sees that
something was there. A backslash is printed as is, so ``\\x1b`` typed as text looks the
same: ``--json`` is the exact channel.
"""

from __future__ import annotations

from rich.text import Text

from cairn.domain.characters import neutralise

__all__ = ["shown", "visible"]


def _escape(char: str) -> str:
    return char.encode("unicode_escape").decode("ascii")


def visible(text: str) -> str:
    """``text`` safe to write to a terminal (module docstring)."""
    return neutralise(text, _escape)


def shown(text: str) -> Text:
    """:func:`visible` as a rich ``Text`` (never read as markup or emoji codes)."""
    return Text(visible(text))
