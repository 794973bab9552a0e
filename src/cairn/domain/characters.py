"""The characters stored text must never carry raw to a reader: one table, three renderings.

Stored text is whatever a user, a tool or a model wrote, so it may hold characters that act
on the reader rather than being read: terminal controls (ESC starts a command that clears
the screen, sets the window title or writes a hyperlink; BS and CR overwrite what was
printed), bidirectional controls that reorder what is shown without changing what is stored
(Trojan Source, CVE-2021-42574), and invisible characters that carry text nobody sees: Unicode
tag characters are an invisible copy of ASCII that models read ("ASCII smuggling"), and
variation selectors give 256 invisible values after any character, enough to hide any bytes
("emoji smuggling"). And it may hold characters a model reads as ``<`` or ``>``.

Every reader gets what :data:`HIDDEN` matches rendered its own way:

- the model's context block (``cairn.retrieval.render.escape``) drops it (whitespace folds
  to a space) and maps :data:`ANGLE_BRACKET_LOOKALIKES` to ``<``/``>`` before escaping them;
- the terminal (``cairn.cli.terminal.visible``) shows it as a visible escape (``\\x1b``,
  ``\\u202e``), so an operator sees that something was there;
- JSON (:func:`json_escape`) writes it as ``\\uXXXX``: a decoder gets the exact text back.

The block and the terminal go through :func:`neutralise`, which keeps what text needs: one
zero-width joiner or non-joiner between two visible characters (emoji sequences such as 👩‍💻,
Persian می‌خواهم, Indic conjuncts) and one emoji or text presentation selector (U+FE0F,
U+FE0E) right after a visible character (❤️, 1️⃣). A run of them, or one at an edge or beside
a space, is what smuggling looks like and is not kept; one per visible character carries
too little to spell out an instruction. What the block loses: subdivision flags (🏴 and tag
characters) show as 🏴, ideographic and Mongolian variation selectors lose their glyph
variant (the base character stays), right-to-left text its explicit direction marks.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "ANGLE_BRACKET_LOOKALIKES",
    "BIDI_CONTROLS",
    "CONTROLS",
    "HIDDEN",
    "INVISIBLE",
    "LINE_SEPARATORS",
    "TAGS",
    "VARIATION_SELECTORS",
    "VISIBLE_FORMAT",
    "is_hidden",
    "json_escape",
    "neutralise",
]

Ranges = tuple[tuple[int, int], ...]

# C0 controls (TAB, LF and CR too), DEL and C1 controls: none has a glyph, and ESC, the
# one-character CSI (U+009B) and OSC (U+009D), BEL, BS and CR act on a terminal.
CONTROLS: Final[Ranges] = ((0x00, 0x1F), (0x7F, 0x9F))
# Line and paragraph separators: a line break to some readers.
LINE_SEPARATORS: Final[Ranges] = ((0x2028, 0x2029),)
# Bidirectional controls: marks (ALM, LRM, RLM), embeddings and overrides, isolates.
BIDI_CONTROLS: Final[Ranges] = (
    (0x061C, 0x061C),
    (0x200E, 0x200F),
    (0x202A, 0x202E),
    (0x2066, 0x2069),
)
# The rest of Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt: what a
# renderer shows nothing for), and the interlinear annotation characters, which hide their
# annotation from some readers.
INVISIBLE: Final[Ranges] = (
    (0x00AD, 0x00AD),  # soft hyphen
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x115F, 0x1160),  # Hangul choseong and jungseong fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels (Unicode: not to be used)
    (0x180B, 0x180F),  # Mongolian free variation selectors and vowel separator
    (0x200B, 0x200D),  # zero width space, non-joiner, joiner
    (0x2060, 0x2065),  # word joiner, invisible operators (2065 reserved)
    (0x206A, 0x206F),  # deprecated format characters
    (0x3164, 0x3164),  # Hangul filler
    (0xFEFF, 0xFEFF),  # zero width no-break space (byte order mark)
    (0xFFA0, 0xFFA0),  # halfwidth Hangul filler
    (0xFFF0, 0xFFFB),  # reserved ignorables; interlinear annotation anchor..terminator
    (0x1BCA0, 0x1BCA3),  # shorthand format controls
    (0x1D173, 0x1D17A),  # musical symbol format controls
    (0xE0080, 0xE00FF),  # reserved ignorables after the tags
    (0xE01F0, 0xE0FFF),  # reserved ignorables after the variation selectors
)
# Tag characters (and the reserved E0000, E0002..E001F among them).
TAGS: Final[Ranges] = ((0xE0000, 0xE007F),)
# Variation selectors 1-16 and 17-256 (U+FE0E and U+FE0F kept where emoji need them).
VARIATION_SELECTORS: Final[Ranges] = ((0xFE00, 0xFE0F), (0xE0100, 0xE01EF))

HIDDEN: Final[Ranges] = (
    CONTROLS + LINE_SEPARATORS + BIDI_CONTROLS + INVISIBLE + TAGS + VARIATION_SELECTORS
)
"""Everything :func:`neutralise` hands to its ``replace``."""

# Format characters (category Cf) that are not hidden: each shows a glyph (Arabic, Syriac
# and Kaithi number and end-of-verse marks, Egyptian hieroglyph layout controls). Read by
# the test that checks every Cf character is in HIDDEN or here.
VISIBLE_FORMAT: Final[Ranges] = (
    (0x0600, 0x0605),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
)

# What a reader, a model above all, may take for "<" or ">": the confusables of "<" and ">"
# in Unicode's confusables.txt (marked "c") and the angle brackets of other blocks. Each
# becomes the ASCII bracket, which the context block then escapes like any other.
# The CJK angle brackets 〈 〉 are mapped although Chinese marks the titles of short works
# with them: they are single angle brackets, the shape a tag is made of. Not mapped:
# - CJK book-title marks 《 》 (U+300A/B) and guillemets « » (U+00AB/BB): the everyday
#   punctuation of Chinese (《三体》) and of French, German or Russian prose; mapping them
#   would garble every book title and quotation, and a tag is not made of double marks.
#   (The mathematical double brackets ⟪ ⟫ and ≪ ≫ are mapped: no prose uses them.)
# - Canadian syllabics ᐸ ᐳ (U+1438, U+1433; confusables of "<" and ">"): letters of
#   Inuktitut and Cree words.
# The block's integrity does not rest on this table: no "<" or ">" of stored text ever
# reaches the block unescaped; the table only keeps stored text from looking like tags.
ANGLE_BRACKET_LOOKALIKES: Final[dict[str, str]] = {
    "\u02c2": "<",  # ˂ modifier letter left arrowhead (c)
    "\u02c3": ">",  # ˃ modifier letter right arrowhead (c)
    "\u02f1": "<",  # ˱ modifier letter low left arrowhead
    "\u02f2": ">",  # ˲ modifier letter low right arrowhead
    "\u16b2": "<",  # ᚲ runic letter kauna (c; a historic script)
    "\u2039": "<",  # ‹ single left-pointing angle quotation mark (c)
    "\u203a": ">",  # › single right-pointing angle quotation mark (c)
    "\u226a": "<<",  # ≪ much less-than (c)
    "\u226b": ">>",  # ≫ much greater-than (c)
    "\u2329": "<",  # 〈 left-pointing angle bracket
    "\u232a": ">",  # 〉 right-pointing angle bracket
    "\u276c": "<",  # ❬ medium left-pointing angle bracket ornament
    "\u276d": ">",  # ❭ medium right-pointing angle bracket ornament
    "\u276e": "<",  # ❮ heavy left-pointing angle quotation mark ornament (c)
    "\u276f": ">",  # ❯ heavy right-pointing angle quotation mark ornament (c)
    "\u2770": "<",  # ❰ heavy left-pointing angle bracket ornament
    "\u2771": ">",  # ❱ heavy right-pointing angle bracket ornament
    "\u27e8": "<",  # ⟨ mathematical left angle bracket
    "\u27e9": ">",  # ⟩ mathematical right angle bracket
    "\u27ea": "<<",  # ⟪ mathematical left double angle bracket
    "\u27eb": ">>",  # ⟫ mathematical right double angle bracket
    "\u2991": "<",  # ⦑ left angle bracket with dot
    "\u2992": ">",  # ⦒ right angle bracket with dot
    "\u29fc": "<",  # ⧼ left-pointing curved angle bracket
    "\u29fd": ">",  # ⧽ right-pointing curved angle bracket
    "\u2a20": ">>",  # ⨠ Z notation schema piping (c)
    "\u3008": "<",  # 〈 CJK left angle bracket
    "\u3009": ">",  # 〉 CJK right angle bracket
    "\ufe64": "<",  # ﹤ small less-than sign
    "\ufe65": ">",  # ﹥ small greater-than sign
    "\uff1c": "<",  # ＜ fullwidth less-than sign
    "\uff1e": ">",  # ＞ fullwidth greater-than sign
    "\U00016f3f": ">",  # 𖼿 Miao letter archaic zza (c; a historic letter)
    "\U0001d236": "<",  # 𝈶 Greek instrumental notation symbol-40 (c)
    "\U0001d237": ">",  # 𝈷 Greek instrumental notation symbol-42 (c)
}


def _character_class(ranges: Ranges) -> str:
    return "".join(
        re.escape(chr(low))
        if low == high
        else f"{re.escape(chr(low))}-{re.escape(chr(high))}"
        for low, high in ranges
    )


_HIDDEN_CLASS = f"[{_character_class(HIDDEN)}]"
_HIDDEN_ONE = re.compile(_HIDDEN_CLASS)
_HIDDEN_RUN = re.compile(f"{_HIDDEN_CLASS}+")
_SELECTORS = "\ufe0e\ufe0f"
# The one shape of hidden run text needs: a presentation selector, a joiner, or both.
_NEEDED = re.compile(f"[{_SELECTORS}]?[\u200c\u200d]?")


def is_hidden(char: str) -> bool:
    """Whether ``char`` (one character) is in :data:`HIDDEN`."""
    return _HIDDEN_ONE.fullmatch(char) is not None


def _needed(run: str, before: str, after: str) -> bool:
    """A run text needs: a selector right after a visible character, or a joiner (after an
    optional selector) between two visible characters."""
    if not run or _NEEDED.fullmatch(run) is None or not before or before.isspace():
        return False
    return run[-1] in _SELECTORS or bool(after and not after.isspace())


def neutralise(text: str, replace: Callable[[str], str]) -> str:
    """``text`` with each :data:`HIDDEN` character replaced by ``replace(char)``, except a
    joiner or presentation selector text needs (module docstring)."""

    def run(match: re.Match[str]) -> str:
        chars = match.group()
        start, end = match.span()
        before = text[start - 1] if start else ""
        after = text[end] if end < len(text) else ""
        if _needed(chars, before, after):
            return chars
        return "".join(replace(char) for char in chars)

    return _HIDDEN_RUN.sub(run, text)


def _json_escape_one(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_escape(document: str) -> str:
    """A JSON document (as ``json.dumps`` writes it) with every :data:`HIDDEN` character
    written as a ``\\uXXXX`` escape (a surrogate pair above U+FFFF).

    Such characters only occur inside JSON strings, where the escape decodes to the same
    character: a JSON reader gets the exact text, a terminal never sees it raw.
    """
    return _HIDDEN_ONE.sub(_json_escape_one, document)
