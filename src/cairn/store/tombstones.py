"""Identity hashes of memories, and the tombstones that keep forgotten ones out.

A tombstone holds hashes only, never text. Two kinds:

- a claim tombstone (``tombstones``): the claim's provenance key and content hash. Both
  are scoped: the same words in two scopes are two memories, and forgetting one leaves the
  other (tests/runtime/test_forget_evidence.py::test_scopes_are_never_merged_or_widened).
- an evidence tombstone (``evidence_tombstones``): the hash of a forgotten or cleared turn's
  event ID, and for an explicitly forgotten turn also of its normalised text, so neither a
  replay, an import of an older export nor the same words under a fresh ID store it again.

Matching normalises what does not change meaning (:func:`normal_form`): Unicode width and
compatibility forms, case, whitespace, punctuation, invisible format characters (zero-width,
bidi controls) and filler prefixes such as "Note:" or "记住". Digits and letters are never
dropped, so "3.5" and "35" stay different.

Hashes written before schema 5 (``*_v1``) had no scope and a lighter normal form; they are
still checked, agent-wide, so an old tombstone keeps suppressing (it fails closed).
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    import apsw

    from cairn.domain.claim import ClaimDraft
    from cairn.domain.scope import Scope

__all__ = [
    "claim_hashes",
    "claim_is_tombstoned",
    "content_hash",
    "content_hash_v1",
    "event_content_hash",
    "event_id_hash",
    "evidence_tombstoned",
    "normal_form",
    "provenance_key",
    "provenance_key_v1",
    "write_evidence_tombstones",
    "write_tombstone",
]

# Said before a statement without changing it; stripped (repeatedly) from the start.
_FILLER: Final = re.compile(
    r"^(?:"
    r"(?:note|notes|remember|reminder|fyi|important|btw|ps|memo|update|info)\s*[:：\-–—]+\s*"
    r"|(?:fyi|btw)\b[\s,，]*"
    r"|(?:please\s+)?(?:remember|note|keep in mind)\s+that\s+"
    r"|(?:请)?(?:记住|记得|注意|备注|提醒|更新)\s*[:：，,]?\s*"
    r")+",
    re.IGNORECASE,
)


_CACHED: Final = 1 << 16


class _ByCategory(dict[int, "str | None"]):
    """A ``str.translate`` table over all of Unicode, filled on first sight of each code
    point (so the per-character work runs in C after warm-up): ``rule`` gives a character's
    replacement from its general category (``None`` deletes it)."""

    def __init__(self, rule: Callable[[str], str | None]) -> None:
        super().__init__()
        self._rule = rule

    def __missing__(self, code: int) -> str | None:
        replacement = self._rule(chr(code))
        if len(self) < _CACHED:  # bounded, whatever text arrives
            self[code] = replacement
        return replacement


# Cf: zero-width spaces and joiners, bidi controls, soft hyphens, tag characters.
_INVISIBLE: Final = _ByCategory(
    lambda char: None if unicodedata.category(char) == "Cf" else char
)
# Punctuation, symbols, separators and controls separate words; letters, marks and
# digits are the words.
_SEPARATORS: Final = _ByCategory(
    lambda char: " " if unicodedata.category(char)[0] in "PSZC" else char
)


def normal_form(text: str) -> str:
    """The text as a tombstone compares it: what a one-character change cannot escape."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    stripped = _FILLER.sub("", folded.translate(_INVISIBLE).strip())
    return " ".join(stripped.translate(_SEPARATORS).split())


def _legacy_normal(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def _scope_parts(scope: Scope) -> tuple[str, str]:
    return scope.kind.value, scope.key or ""


def content_hash(agent_id: str, scope: Scope, text: str) -> str:
    """Domain-separated hash of a claim's normalised content in its scope."""
    kind, key = _scope_parts(scope)
    return _digest("cairn.claim.content.v2", agent_id, kind, key, normal_form(text))


def content_hash_v1(agent_id: str, text: str) -> str:
    """The pre-schema-5 content hash (no scope): checked, never written."""
    return _digest("cairn.claim.content.v1", agent_id, _legacy_normal(text))


def provenance_key(agent_id: str, draft: ClaimDraft) -> str:
    """Domain-separated hash of where a claim came from, what it says and where it applies.

    Re-extracting the same evidence yields the same key, so replays are no-ops.
    """
    spans = sorted((span.event_id, span.start, span.end) for span in draft.spans)
    kind, key = _scope_parts(draft.scope)
    payload = json.dumps(
        [
            "cairn.claim.provenance.v2",
            agent_id,
            draft.kind.value,
            kind,
            key,
            normal_form(draft.text),
            spans,
        ],
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def provenance_key_v1(agent_id: str, draft: ClaimDraft) -> str:
    """The pre-schema-5 provenance key (no scope): checked, never written."""
    spans = sorted((span.event_id, span.start, span.end) for span in draft.spans)
    payload = json.dumps(
        [
            "cairn.claim.provenance.v1",
            agent_id,
            draft.kind.value,
            _legacy_normal(draft.text),
            spans,
        ],
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def claim_hashes(agent_id: str, draft: ClaimDraft) -> tuple[str, str]:
    """``(provenance_key, content_hash)`` as stored on the claim row."""
    return provenance_key(agent_id, draft), content_hash(
        agent_id, draft.scope, draft.text
    )


def claim_is_tombstoned(
    connection: apsw.Connection,
    agent_id: str,
    draft: ClaimDraft,
    extra_provenance: Iterable[str] = (),
) -> bool:
    """Whether a tombstone covers ``draft``: its scoped hashes, or a legacy agent-wide one."""
    provenances = [
        provenance_key(agent_id, draft),
        provenance_key_v1(agent_id, draft),
        *extra_provenance,
    ]
    contents = [
        content_hash(agent_id, draft.scope, draft.text),
        content_hash_v1(agent_id, draft.text),
    ]
    row = connection.execute(
        "SELECT 1 FROM tombstones WHERE agent_id = ?1 AND provenance_hash IN"
        " (SELECT value FROM json_each(?2))"
        " UNION ALL SELECT 1 FROM tombstones WHERE agent_id = ?1 AND content_hash IN"
        " (SELECT value FROM json_each(?3)) LIMIT 1",
        (agent_id, json.dumps(provenances), json.dumps(contents)),
    ).fetchone()
    return row is not None


def write_tombstone(
    connection: apsw.Connection,
    agent_id: str,
    provenance: str,
    content: str,
    stamp: str,
) -> None:
    """Record a forgotten claim's identity: its provenance and content hashes, no text."""
    connection.execute(
        "INSERT OR IGNORE INTO tombstones (agent_id, provenance_hash, content_hash,"
        " created_at) VALUES (?, ?, ?, ?)",
        (agent_id, provenance, content, stamp),
    )


# -- evidence --------------------------------------------------------------------------------
def event_id_hash(agent_id: str, event_id: str) -> str:
    return _digest("cairn.evidence.id.v1", agent_id, event_id)


def event_content_hash(agent_id: str, text: str) -> str:
    return _digest("cairn.evidence.content.v1", agent_id, normal_form(text))


def write_evidence_tombstones(
    connection: apsw.Connection, agent_id: str, hashes: Iterable[str], stamp: str
) -> None:
    connection.executemany(
        "INSERT OR IGNORE INTO evidence_tombstones (agent_id, identity_hash, created_at)"
        " VALUES (?, ?, ?)",
        [(agent_id, digest, stamp) for digest in hashes],
    )


def evidence_tombstoned(
    connection: apsw.Connection, agent_id: str, hashes: Iterable[str]
) -> bool:
    """Whether any of ``hashes`` (of an event ID or a normalised text) was forgotten."""
    row = connection.execute(
        "SELECT 1 FROM json_each(?) AS wanted CROSS JOIN evidence_tombstones t"
        " ON t.agent_id = ? AND t.identity_hash = wanted.value LIMIT 1",
        (json.dumps(list(hashes)), agent_id),
    ).fetchone()
    return row is not None
