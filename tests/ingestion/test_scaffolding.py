"""Intake strips cairn's own recalled blocks and host scaffolding before redaction, and
redaction still runs on what is kept."""

from __future__ import annotations

from cairn.domain.evidence import EvidenceClass, PreparedEvent, Turn
from cairn.ingestion.intake import prepare_turns
from cairn.ingestion.scaffolding import strip_scaffolding
from cairn.retrieval.render import (
    DIRECTIVE_CLOSE,
    DIRECTIVE_OPEN,
    MEMORY_CLOSE,
    MEMORY_OPEN,
)


def prepared(text: str) -> PreparedEvent:
    [event] = prepare_turns([Turn("e-1", "s-1", "user", text)], 2400)
    assert isinstance(event, PreparedEvent)
    return event


def test_memory_and_directive_blocks_are_stripped() -> None:
    text = f"{MEMORY_OPEN}- my parrot is Kiwi\n{MEMORY_CLOSE}\nI keep bees.\n{DIRECTIVE_OPEN}- be brief\n{DIRECTIVE_CLOSE}"
    assert strip_scaffolding(text) == "I keep bees."


def test_a_turn_of_only_scaffolding_is_empty_noise() -> None:
    event = prepared(
        f"<system-reminder>ctx</system-reminder>\n{MEMORY_OPEN}- x\n{MEMORY_CLOSE}"
    )
    assert event.text == ""
    assert event.evidence_class is EvidenceClass.EMPTY


def test_an_unclosed_block_strips_to_the_end() -> None:
    assert strip_scaffolding(f"keep this\n{MEMORY_OPEN}- recalled tail") == "keep this"


def test_text_kept_around_a_crafted_block_is_still_redacted() -> None:
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    event = prepared(f"{MEMORY_OPEN}x{MEMORY_CLOSE} my token is {secret}")
    assert secret not in event.text
    assert "[REDACTED" in event.text


def test_plain_text_is_untouched() -> None:
    text = "a < b and c > d"
    assert strip_scaffolding(text) is text
