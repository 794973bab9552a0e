"""The ranges of the memory API's numeric arguments, and the one check of each.

``cairn.Memory`` applies these where a call enters the runtime, so the embedded API, the
IPC server (and through it both clients and the CLI) refuse a value the same way: an
:class:`~cairn.errors.ArgumentOutOfRangeError` whose sentence names the argument, the value
and the range. Nothing is clamped: a value outside its range is a caller's mistake, and
guessing what was meant (``k=0`` as "the default", a negative wait as "none") hid bugs.

The caps (design/ipc.md, "Argument ranges"):

- ``k``: an integer from 1 to ``MAX_RECALL_K`` (100). Ranking builds only the ``k`` items a
  recall returns out of at most a few hundred candidates; more is never a prompt's worth.
- ``budget_bytes``: an integer from 1 to ``MAX_BUDGET_BYTES`` (1 MiB) of UTF-8.
- ``wait_s``: finite seconds from 0 to ``MAX_WAIT_S`` (one hour); 0 answers at once with
  what is ready (``partial`` or ``pending``).
- drain ``timeout_s``: finite seconds, more than 0, at most ``MAX_DRAIN_TIMEOUT_S`` (a day);
  the same for the clients' own ``timeout_s`` and ``stop_timeout_s``.
- a ``limit`` of records or notices: an integer from 1 to ``MAX_LIST_LIMIT`` (1000).
- attention ``item_ids``: at most ``MAX_ITEM_IDS`` (1000, one ``attention`` call's worth)
  integers, each a SQLite row ID from 1 to 2^63 - 1.
- caller metadata (cairn.domain.metadata): at most ``MAX_TAGS`` (32) tags of 1 to
  ``MAX_TAG_CHARS`` (64) characters each; ``importance`` a finite number from 0 to 1;
  ``extra`` a JSON object of at most ``MAX_EXTRA_BYTES`` (4 KiB) encoded, nested at most
  ``MAX_EXTRA_DEPTH`` (8) deep. A recall filters on at most ``MAX_TAGS`` tags too.
- ``as_of``: an aware time that is a valid time in UTC (years 1 to 9999 there).
- a query vector (checked by the runtime, which knows the embedder): as many finite
  numbers as the serving embedder's dimension, not all zero, each finite as float32.

Booleans are refused wherever an integer or a number is asked for (``True`` is an ``int``
in Python, never a count). This module imports nothing of the engine: the clients use it
to refuse an integer the wire cannot carry with the sentence the server would send.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import TYPE_CHECKING, Final

from cairn.errors import ArgumentOutOfRangeError, InvalidInputError

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "MAX_BUDGET_BYTES",
    "MAX_DRAIN_TIMEOUT_S",
    "MAX_EVIDENCE_REFS",
    "MAX_EXTRA_BYTES",
    "MAX_EXTRA_DEPTH",
    "MAX_ITEM_ID",
    "MAX_ITEM_IDS",
    "MAX_LIST_LIMIT",
    "MAX_RECALL_K",
    "MAX_TAGS",
    "MAX_TAG_CHARS",
    "MAX_WAIT_S",
    "check_as_of",
    "check_budget_bytes",
    "check_client_timeout_s",
    "check_drain_timeout_s",
    "check_evidence_refs",
    "check_feedback_ids",
    "check_item_ids",
    "check_k",
    "check_limit",
    "check_wait_s",
    "shown_value",
]

MAX_RECALL_K: Final = 100
MAX_BUDGET_BYTES: Final = 1 << 20
MAX_WAIT_S: Final = 3600.0
MAX_DRAIN_TIMEOUT_S: Final = 86400.0
MAX_LIST_LIMIT: Final = 1000
MAX_ITEM_IDS: Final = 1000
MAX_ITEM_ID: Final = 2**63 - 1
MAX_EVIDENCE_REFS: Final = 100
# Caller metadata's caps live with Metadata (a domain value may not import the API).
MAX_TAGS: Final = 32
MAX_TAG_CHARS: Final = 64
MAX_EXTRA_BYTES: Final = 4096
MAX_EXTRA_DEPTH: Final = 8

# A value is quoted in the message, never more than this much of it (a caller may pass a
# 10,000-digit integer; the sentence must stay one line).
_SHOWN_CHARS = 40
_SHOWN_BITS = 128
_SHOWN_ITEMS = 4


def shown_value(value: object) -> str:
    """``value`` as the message quotes it: its repr, cut to a readable length, without
    building the repr of a huge value first (a 5,000-digit integer's repr even raises)."""
    if isinstance(value, int) and value.bit_length() > _SHOWN_BITS:
        return f"an integer of {value.bit_length()} bits"
    if isinstance(value, list | tuple) and len(value) > _SHOWN_ITEMS:
        head = ", ".join(shown_value(item) for item in value[:_SHOWN_ITEMS])
        return f"[{head}, ...] ({len(value)} values)"
    text = repr(value)
    if len(text) > _SHOWN_CHARS:
        return f"{text[: _SHOWN_CHARS - 3]}..."
    return text


def _integer(name: str, value: object, low: int, high: int) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high:
        return value
    raise ArgumentOutOfRangeError(
        f"{name} must be an integer from {low} to {high}; got {shown_value(value)}"
    )


def _seconds(name: str, value: object, high: float, *, zero: bool) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        # An integer past float's range is as out of range as inf.
        number = float(value) if abs(value) <= high else math.inf
        if math.isfinite(number) and (number >= 0 if zero else number > 0):
            return number
    low = "from 0" if zero else "more than 0 and"
    raise ArgumentOutOfRangeError(
        f"{name} must be a finite number of seconds {low} up to {high:g};"
        f" got {shown_value(value)}"
    )


def check_k(k: object) -> int:
    return _integer("k", k, 1, MAX_RECALL_K)


def check_budget_bytes(budget_bytes: object) -> int:
    return _integer("budget_bytes", budget_bytes, 1, MAX_BUDGET_BYTES)


def check_limit(limit: object) -> int:
    return _integer("limit", limit, 1, MAX_LIST_LIMIT)


def check_wait_s(wait_s: object) -> float:
    return _seconds("wait_s", wait_s, MAX_WAIT_S, zero=True)


def check_drain_timeout_s(timeout_s: object) -> float:
    return _seconds("timeout_s", timeout_s, MAX_DRAIN_TIMEOUT_S, zero=False)


def check_client_timeout_s(name: str, value: object) -> float:
    """A client's own bound on a wait (the blocking client's ``timeout_s``, the stdio
    clients' ``stop_timeout_s``): the range of a drain timeout."""
    return _seconds(name, value, MAX_DRAIN_TIMEOUT_S, zero=False)


def check_item_ids(item_ids: Iterable[object]) -> tuple[int, ...]:
    """Attention item IDs: a bounded list of row IDs (SQLite's are 1 to 2^63 - 1)."""
    ids = tuple(item_ids)
    if len(ids) > MAX_ITEM_IDS:
        raise ArgumentOutOfRangeError(
            f"item_ids must hold at most {MAX_ITEM_IDS} IDs; got {len(ids)}"
        )
    return tuple(_integer("an attention item ID", i, 1, MAX_ITEM_ID) for i in ids)


def check_feedback_ids(name: str, item_ids: Iterable[object]) -> tuple[str, ...]:
    """Feedback's ``used`` or ``wrong``: at most ``MAX_RECALL_K`` item IDs (no recall
    returns more), each a non-empty string."""
    if isinstance(item_ids, str):
        raise InvalidInputError(f"{name} must be a list of item IDs, not one string")
    ids = tuple(item_ids)
    if len(ids) > MAX_RECALL_K:
        raise ArgumentOutOfRangeError(
            f"{name} must hold at most {MAX_RECALL_K} IDs; got {len(ids)}"
        )
    checked: list[str] = []
    for item in ids:
        if not isinstance(item, str) or not item:
            raise InvalidInputError(
                f"{name} must hold item IDs as recall returned them; got"
                f" {shown_value(item)}"
            )
        checked.append(item)
    return tuple(checked)


def check_evidence_refs(refs: Iterable[object]) -> tuple[str, ...]:
    """``evidence``'s refs: 1 to ``MAX_EVIDENCE_REFS`` IDs (a recalled item's
    ``source_refs`` or a claim ID), each a non-empty string."""
    if isinstance(refs, str):
        raise InvalidInputError("refs must be a list of IDs, not one string")
    checked = tuple(refs)
    if not 1 <= len(checked) <= MAX_EVIDENCE_REFS:
        raise ArgumentOutOfRangeError(
            f"refs must hold 1 to {MAX_EVIDENCE_REFS} IDs; got {len(checked)}"
        )
    for ref in checked:
        if not isinstance(ref, str) or not ref.strip():
            raise InvalidInputError(
                f"refs must hold event or claim IDs; got {shown_value(ref)}"
            )
    return checked  # type: ignore[return-value]


def check_as_of(as_of: object) -> dt.datetime:
    """An aware datetime that exists in UTC (a time at the calendar's edge, like
    ``9999-12-31T23:59:59-05:00``, does not: it would be year 10000 there)."""
    if not isinstance(as_of, dt.datetime):
        raise InvalidInputError(
            f"as_of must be a datetime with a UTC offset; got {shown_value(as_of)}"
        )
    if as_of.utcoffset() is None:
        raise InvalidInputError(
            "as_of must be timezone-aware (e.g. 2026-03-01T09:00:00+00:00)"
        )
    try:
        as_of.astimezone(dt.UTC)
    except OverflowError:
        raise ArgumentOutOfRangeError(
            f"as_of must be a time from 0001-01-01 to 9999-12-31 in UTC;"
            f" got {as_of.isoformat()}"
        ) from None
    return as_of
