"""Screening of every way into memory that is not a turn's text: IDs, remember, directives,
imported records.

Turn text and speakers are redacted in cairn.ingestion.intake. Everything else a caller can
make cairn store goes through here, so a secret has no side door: remembered claims (by a
user or a model) and directive text are redacted like turn text; an imported record's
texts are redacted again (an export from an older cairn may predate a pattern); and an ID
(event, session, late-recall request) is refused when it holds a secret, because IDs are
stored, indexed and shown verbatim and cannot be rewritten without breaking idempotency.
"""

from __future__ import annotations

from typing import Any

from cairn.domain.ids import identifier_problem
from cairn.errors import InvalidIdentifierError, SecretInIdentifierError
from cairn.ingestion.redact import redact, secret_kinds

__all__ = ["redact_record", "redact_text", "screen_identifier"]


def redact_text(text: str) -> str:
    """``text`` with every secret-like span replaced by a ``[REDACTED:<kind>]`` marker."""
    return redact(text).text


def screen_identifier(what: str, value: str) -> None:
    """Refuse an ID that breaks the ID rules (:class:`InvalidIdentifierError`) or holds
    a secret, naming only the kind (never the value)."""
    problem = identifier_problem(what, value)
    if problem is not None:
        raise InvalidIdentifierError(f"{problem} (nothing was stored)")
    kinds = secret_kinds(value)
    if kinds:
        raise SecretInIdentifierError(
            f"the {what} looks like it holds a secret ({', '.join(kinds)});"
            " IDs are stored and shown verbatim, so use an opaque ID (nothing was stored)"
        )


# The text fields of each export record type (cairn.store.export; design/cli.md).
_TEXT_FIELDS = {
    "event": ("text", "speaker"),
    "claim": ("text",),
    "directive": ("text",),
}
_ID_FIELDS = {"event": (("id", "event ID"), ("session", "session ID"))}


def redact_record(record: dict[str, Any]) -> dict[str, Any]:
    """An import record with its texts redacted; a secret-bearing ID raises."""
    kind = record.get("type")
    for field, what in _ID_FIELDS.get(str(kind), ()):
        value = record.get(field)
        if isinstance(value, str):
            screen_identifier(what, value)
    fields = _TEXT_FIELDS.get(str(kind), ())
    changed = {
        field: redact_text(value)
        for field in fields
        if isinstance(value := record.get(field), str)
    }
    return {**record, **changed} if changed else record
