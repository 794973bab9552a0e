"""Chinese names in Latin letters: 林伟 is "Lin Wei" (or "Wei Lin"), 梅 is "Mei".

A person known as "Lin Wei" in English turns is 林伟 in Chinese ones, and no turn need
give both. Their pinyin, without tones, is what the two forms share: a Chinese person's
name of one to three characters is also known by its romanised forms (surname first, as
Chinese writes it, and given name first, as English often does; the given name's
syllables written as one word, "Wang Xiaoming"). Matching by sound is inherently loose
(梅, 美 and 玫 are all "Mei"), so only a name already taken for a person's is romanised,
and a romanised form joins a name to a person only when exactly one person has it
(cairn.store.entities).

The readings are the table ``cairn/data/pinyin.txt`` (generated from the Unihan data by
tools/build_pinyin_table.py), loaded on first use: about 28,000 characters.
"""

from __future__ import annotations

import functools
import itertools
import re
from importlib import resources

__all__ = ["MAX_FORMS", "is_chinese_name", "romanised_forms"]

_CHINESE_NAME = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]{1,3}")
# Polyphonic characters multiply the readings of a name; the first few (the table
# lists a character's usual reading first) are enough for a name, and bound the lookups.
MAX_FORMS = 8


@functools.cache
def _readings() -> dict[str, tuple[str, ...]]:
    table: dict[str, list[str]] = {}
    text = (resources.files("cairn.data") / "pinyin.txt").read_text(encoding="utf-8")
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        syllable, _, characters = line.partition(" ")
        for character in characters:
            table.setdefault(character, []).append(syllable)
    return {character: tuple(found) for character, found in table.items()}


def is_chinese_name(name: str) -> bool:
    """Whether ``name`` is one to three Chinese characters and nothing else."""
    return _CHINESE_NAME.fullmatch(name) is not None


def romanised_forms(name: str) -> tuple[str, ...]:
    """The Latin forms of a Chinese name of one to three characters, title-cased (no
    forms for anything else, or when a character has no known reading)."""
    if not is_chinese_name(name):
        return ()
    table = _readings()
    try:
        options = [table[character] for character in name]
    except KeyError:
        return ()
    forms: list[str] = []
    for syllables in itertools.islice(itertools.product(*options), MAX_FORMS):
        if len(syllables) == 1:
            forms.append(syllables[0].title())
            continue
        surname, given = syllables[0].title(), "".join(syllables[1:]).title()
        forms.extend((f"{surname} {given}", f"{given} {surname}"))
    return tuple(dict.fromkeys(forms))
