"""Caller metadata: tags, an importance and a small JSON object a host attaches to a turn
or a remember, and the filters a recall applies on it.

``Metadata`` is validated when it is made, so a turn or a remember carrying a bad value
raises :class:`~cairn.errors.InvalidMetadataError` (naming the field) before anything is
queued. The caps are in :mod:`cairn.api.bounds`:

- ``tags``: at most ``MAX_TAGS`` strings of 1 to ``MAX_TAG_CHARS`` characters, no control
  characters, NFC-normalised and otherwise kept as given (matching is exact and
  case-sensitive); duplicates are dropped and the rest sorted, so equal sets are equal.
- ``importance``: a finite number from 0 (unimportant) to 1 (most important), or None
  for "not said". One number rather than an integer priority: it composes (the maximum of
  several turns) and weighs a score without a table of levels (design/recall.md).
- ``extra``: a JSON object (string keys; strings, finite numbers, booleans, null, lists
  and objects) of at most ``MAX_EXTRA_BYTES`` encoded and ``MAX_EXTRA_DEPTH`` levels deep;
  kept and returned as given, never searched.

What is learned from turns inherits their metadata (:func:`merged`): the union of the
tags, the largest importance, and the extra objects' keys, the first value of a key
kept (the claim's own, then its sources' in the order they arrived) while the object
stays under its cap.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import unicodedata
from typing import Any, Final

import attrs

from cairn.errors import InvalidMetadataError

__all__ = [
    "EVIDENCE_KIND",
    "Metadata",
    "RecallFilter",
    "check_tags",
    "merged",
    "metadata_from_json",
]

# The caps (design/ipc.md, "Argument ranges"; cairn.api.bounds names them too).
MAX_TAGS: Final = 32
MAX_TAG_CHARS: Final = 64
MAX_EXTRA_BYTES: Final = 4096
MAX_EXTRA_DEPTH: Final = 8
_SHOWN_CHARS = 40


def shown_value(value: object) -> str:
    """``value`` as a message quotes it: its repr, cut to a readable length."""
    if isinstance(value, list | tuple) and len(value) > 4:
        return f"[{', '.join(map(shown_value, value[:4]))}, ...] ({len(value)} values)"
    text = (
        repr(value)
        if not isinstance(value, int) or value.bit_length() < 128
        else "a huge integer"
    )
    return text if len(text) <= _SHOWN_CHARS else f"{text[: _SHOWN_CHARS - 3]}..."


# The kind a recall item of a stored turn has (beside the claim kinds).
EVIDENCE_KIND = "evidence"


def check_tags(value: object, what: str = "tags") -> tuple[str, ...]:
    """Tags as stored and matched: a bounded set of short printable strings."""
    if isinstance(value, str) or not isinstance(value, list | tuple | set | frozenset):
        raise InvalidMetadataError(
            f"{what} must be a list of strings; got {shown_value(value)}"
        )
    if len(value) > MAX_TAGS:
        raise InvalidMetadataError(
            f"{what} must hold at most {MAX_TAGS} tags; got {len(value)}"
        )
    tags: set[str] = set()
    for tag in value:
        if not isinstance(tag, str):
            raise InvalidMetadataError(
                f"{what} must hold strings; got {shown_value(tag)}"
            )
        text = unicodedata.normalize("NFC", tag.strip())
        if not 1 <= len(text) <= MAX_TAG_CHARS:
            raise InvalidMetadataError(
                f"a tag must be 1 to {MAX_TAG_CHARS} characters; got {shown_value(tag)}"
            )
        if any(unicodedata.category(char) in {"Cc", "Cs"} for char in text):
            raise InvalidMetadataError(
                f"a tag must be printable text; got {shown_value(tag)}"
            )
        tags.add(text)
    return tuple(sorted(tags))


def _importance(value: object) -> float | None:
    if value is None:
        return None
    if (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and abs(value) <= 1
        and math.isfinite(value)
        and value >= 0
    ):
        return float(value)
    raise InvalidMetadataError(
        f"importance must be a number from 0 to 1; got {shown_value(value)}"
    )


def _json_value(value: object, depth: int) -> None:
    if depth > MAX_EXTRA_DEPTH:
        raise InvalidMetadataError(
            f"extra must be nested at most {MAX_EXTRA_DEPTH} levels deep"
        )
    if value is None or isinstance(value, str | bool | int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidMetadataError(f"extra holds a non-finite number ({value!r})")
        return
    if isinstance(value, list | tuple):
        for item in value:
            _json_value(item, depth + 1)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidMetadataError(
                    f"extra's keys must be strings; got {shown_value(key)}"
                )
            _json_value(item, depth + 1)
        return
    raise InvalidMetadataError(
        f"extra must hold JSON values only; got {type(value).__name__}"
    )


def _encoded(extra: dict[str, Any]) -> str:
    return json.dumps(extra, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _extra(value: object) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidMetadataError(
            f"extra must be a JSON object; got {shown_value(value)}"
        )
    _json_value(value, 1)
    try:
        text = _encoded(value)
    except (ValueError, TypeError) as error:  # e.g. an integer too long to print
        raise InvalidMetadataError(f"extra is not JSON: {error}") from None
    size = len(text.encode("utf-8"))
    if size > MAX_EXTRA_BYTES:
        raise InvalidMetadataError(
            f"extra must be at most {MAX_EXTRA_BYTES} bytes of JSON; got {size}"
        )
    plain: dict[str, Any] = json.loads(text)
    return plain


@attrs.frozen
class Metadata:
    """What a caller says about a turn or a memory (module docstring): tags a recall can
    filter on, an importance that weighs ranking a little, and a small JSON object kept
    with it."""

    tags: tuple[str, ...] = attrs.field(default=(), converter=check_tags)
    importance: float | None = attrs.field(default=None, converter=_importance)
    # Not hashed: a dict has no hash, and two values differing only here are rare.
    extra: dict[str, Any] = attrs.field(factory=dict, converter=_extra, hash=False)

    @property
    def empty(self) -> bool:
        return not self.tags and self.importance is None and not self.extra

    def to_json(self) -> str | None:
        """The stored form (``events.metadata``, ``claims.metadata``); None when empty."""
        if self.empty:
            return None
        data: dict[str, Any] = {}
        if self.tags:
            data["tags"] = list(self.tags)
        if self.importance is not None:
            data["importance"] = self.importance
        if self.extra:
            data["extra"] = self.extra
        return _encoded(data)

    @classmethod
    def from_data(
        cls, data: object, what: str = "metadata", *, inherited: bool = False
    ) -> Metadata:
        """A JSON object ``{"tags": [...], "importance": 0.8, "extra": {...}}`` (every key
        optional) as JSONL ingest, MCP and an import give it. ``inherited`` (a stored
        claim's, an exported one's) may hold more than ``MAX_TAGS`` tags: the union of
        its sources'."""
        if not isinstance(data, dict):
            raise InvalidMetadataError(
                f"{what} must be an object with tags, importance and extra; got"
                f" {shown_value(data)}"
            )
        unknown = set(data) - {"tags", "importance", "extra"}
        if unknown:
            raise InvalidMetadataError(
                f"{what} has unknown fields: {', '.join(sorted(map(str, unknown)))}"
            )
        tags = data.get("tags") or ()
        if inherited and isinstance(tags, list) and len(tags) > MAX_TAGS:
            rest: Metadata | None = None
            for start in range(MAX_TAGS, len(tags), MAX_TAGS):
                rest = merged(rest, cls(tags=tags[start : start + MAX_TAGS]))
            first = cls(tags[:MAX_TAGS], data.get("importance"), data.get("extra"))
            combined = merged(first, rest)
            assert combined is not None  # noqa: S101 - it holds tags
            return combined
        return cls(
            tags=tags, importance=data.get("importance"), extra=data.get("extra")
        )


def metadata_from_json(value: object) -> Metadata | None:
    """A stored value; None for none, and for one that no longer validates (the row
    stays recallable without it, as a stored recurrence does)."""
    if value is None:
        return None
    try:
        metadata = Metadata.from_data(json.loads(str(value)), inherited=True)
    except (ValueError, TypeError):
        return None
    return None if metadata.empty else metadata


def merged(first: Metadata | None, second: Metadata | None) -> Metadata | None:
    """What a claim keeps from two sources of metadata (module docstring): ``first``'s
    extra keys win, ``second``'s join while the object fits its cap."""
    if first is None or first.empty:
        return None if second is None or second.empty else second
    if second is None or second.empty:
        return first
    extra = dict(first.extra)
    for key, value in second.extra.items():
        if key in extra:
            continue
        extra[key] = value
        if len(_encoded(extra).encode("utf-8")) > MAX_EXTRA_BYTES:
            del extra[key]
    importances = [i for i in (first.importance, second.importance) if i is not None]
    tags = sorted(set(first.tags) | set(second.tags))
    # Built without the converters' caps: a claim from many turns may hold more tags
    # than one caller may give.
    combined = Metadata()
    object.__setattr__(combined, "tags", tuple(tags))
    object.__setattr__(combined, "importance", max(importances, default=None))
    object.__setattr__(combined, "extra", extra)
    return combined


def _aware(what: str, value: object) -> dt.datetime | None:
    if value is None:
        return None
    if not isinstance(value, dt.datetime) or value.utcoffset() is None:
        raise InvalidMetadataError(
            f"{what} must be a datetime with a UTC offset; got {shown_value(value)}"
        )
    return value


def _kinds(value: object) -> tuple[str, ...]:
    # Imported here: claims carry Metadata, so this module loads before cairn.domain.claim.
    from cairn.domain.claim import ClaimKind  # noqa: PLC0415

    known = frozenset(kind.value for kind in ClaimKind) | {EVIDENCE_KIND}
    if isinstance(value, str) or not isinstance(value, list | tuple | set | frozenset):
        raise InvalidMetadataError(
            f"kinds must be a list of kinds; got {shown_value(value)}"
        )
    kinds = set()
    for kind in value:
        if kind not in known:
            raise InvalidMetadataError(
                f"unknown kind {shown_value(kind)}; kinds are"
                f" {', '.join(sorted(known))}"
            )
        kinds.add(str(kind))
    return tuple(sorted(kinds))


def _filter_tags(value: object) -> tuple[str, ...]:
    return check_tags(value, "the tags filter")


def _since(value: object) -> dt.datetime | None:
    return _aware("since", value)


def _until(value: object) -> dt.datetime | None:
    return _aware("until", value)


@attrs.frozen
class RecallFilter:
    """Which memories a recall may return, applied in SQL by every candidate source
    before its limit (cairn.store.metadata): any of ``tags``; one of ``kinds`` (claim
    kinds, and ``evidence`` for stored turns); said at or after ``since`` and before
    ``until`` (a turn's time; a claim's evidence time). Empty means no filter."""

    tags: tuple[str, ...] = attrs.field(default=(), converter=_filter_tags)
    kinds: tuple[str, ...] = attrs.field(default=(), converter=_kinds)
    since: dt.datetime | None = attrs.field(default=None, converter=_since)
    until: dt.datetime | None = attrs.field(default=None, converter=_until)

    def __attrs_post_init__(self) -> None:
        if (
            self.since is not None
            and self.until is not None
            and self.since >= self.until
        ):
            raise InvalidMetadataError(
                f"since ({self.since.isoformat()}) must be before until"
                f" ({self.until.isoformat()})"
            )

    @property
    def active(self) -> bool:
        return bool(self.tags or self.kinds or self.since or self.until)
