"""Stored text on a terminal and in JSON: no control, bidi or invisible character of it ever
reaches stdout or stderr raw; the human output shows it as a visible escape, JSON as a
``\\uXXXX`` escape that decodes to the exact text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.table import Table

from cairn.cli.app import emit_json, stdout_console
from cairn.cli.progress import progress_bar
from cairn.cli.terminal import shown, visible
from cairn.domain.characters import HIDDEN, is_hidden, json_escape

if TYPE_CHECKING:
    from pathlib import Path

# A window title (OSC ... BEL), a screen clear (CSI), a one-character C1 CSI, a carriage
# return that would overwrite the line, backspace, DEL, a bidi override and tag characters.
PAYLOAD = (
    "I love oolong tea \x1b]0;pwned\x07 and \x1b[2Jgreen \x9b31mtea\rOVERWRITTEN"
    " \u202egnp.exe\x08\x7f \U000e0069\U000e0067 end"
)


def inert(raw: bytes) -> str:
    """``raw`` as text, asserting it holds no hidden character but line breaks."""
    text = raw.decode("utf-8")
    hidden = sorted({f"U+{ord(c):04X}" for c in text if c != "\n" and is_hidden(c)})
    assert hidden == [], text
    return text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07"),
        ("\x1b[2J", "\\x1b[2J"),
        ("\x9b31m", "\\x9b31m"),
        ("done\rfake", "done\\rfake"),
        ("one\ntwo\tthree", "one\\ntwo\\tthree"),
        ("a\x08\x7f\x00b", "a\\x08\\x7f\\x00b"),
        ("pay \u202etxt.exe", "pay \\u202etxt.exe"),
        ("pass\u200bword\ufeff", "pass\\u200bword\\ufeff"),
        ("hi\U000e0069\U000e0067", "hi\\U000e0069\\U000e0067"),
        ("😀\ufe00\ufe01", "😀\\ufe00\\ufe01"),
        ("line\u2028sep", "line\\u2028sep"),
        # Nothing to hide: unchanged.
        (
            "👩\u200d💻 ❤\ufe0f 《三体》 می\u200cخواهم",
            "👩\u200d💻 ❤\ufe0f 《三体》 می\u200cخواهم",
        ),
        ("[bold]x[/bold] :smile: C:\\x1b", "[bold]x[/bold] :smile: C:\\x1b"),
    ],
)
def test_visible_shows_every_hidden_character_as_an_escape(
    text: str, expected: str
) -> None:
    assert visible(text) == expected


_DANGEROUS = sorted(
    {chr(low) for low, _ in HIDDEN}
    | {chr(high) for _, high in HIDDEN}
    | set("\x1b\x9b\x07\r\n\u202e\u200d\u200c\ufe0f ab")
)


@given(
    st.text(
        alphabet=st.one_of(st.characters(), st.sampled_from(_DANGEROUS)), max_size=60
    )
)
def test_visible_leaves_nothing_that_acts_on_a_terminal(text: str) -> None:
    out = visible(text)
    for index, char in enumerate(out):
        if is_hidden(char):  # only a joiner or selector text needs, never a control
            assert char in "\u200c\u200d\ufe0e\ufe0f", (text, out)
            assert index > 0
    if not any(is_hidden(char) for char in text):
        assert out == text


def test_stored_text_prints_literally(capsys: pytest.CaptureFixture[str]) -> None:
    console = stdout_console()
    table = Table("kind", "memory")
    table.add_row(shown("fact"), shown(PAYLOAD))
    console.print(table)
    console.print(shown("[bold]tea[/bold] :smile:"))
    console.print("[red]ours too[/red] :smile:")
    out = inert(capsys.readouterr().out.encode())
    assert "[bold]tea[/bold] :smile:" in out
    assert "[red]ours too[/red] :smile:" in out
    assert "\\x1b]0;pwned\\x07" in out


def test_json_output_is_inert_and_exact(capsys: pytest.CaptureFixture[str]) -> None:
    data = {"text": PAYLOAD, "zh": "我下周三要去东京开会。", "emoji": "👩\u200d💻"}
    emit_json(data)
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    inert(out.encode())
    assert json.loads(out) == data
    assert "东京" in out  # readable UTF-8, not ensure_ascii
    assert json.loads(json_escape(json.dumps("\U000e0041", ensure_ascii=False))) == (
        "\U000e0041"
    )


def test_a_progress_description_is_text(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("cairn.cli.progress._is_terminal", lambda: True)
    with progress_bar("ingest a{0}[bold]\x1b[2J.jsonl", 10, as_json=False) as bar:
        bar.advance(5)
    assert "a{0}[bold]\\x1b[2J.jsonl" in capsys.readouterr().err


def _cairn(data: Path, *args: str, code: int = 0) -> subprocess.CompletedProcess[bytes]:
    result = subprocess.run(
        [sys.executable, "-m", "cairn", "--data", str(data), *args],
        capture_output=True,
        timeout=300,
        check=False,
        # Wide enough that no table cell wraps an escape across lines.
        env={**os.environ, "COLUMNS": "1000"},
    )
    assert result.returncode == code, result.stderr.decode(errors="replace")
    return result


@pytest.mark.subprocess
def test_a_real_process_never_writes_stored_controls(tmp_path: Path) -> None:
    data = tmp_path / "data"
    turns = tmp_path / "turns.jsonl"
    rows = [
        {"id": "t1", "session": "s", "role": "user", "text": PAYLOAD},
        {"id": "bad\r\x1b[2Jid", "session": "s", "role": "system", "text": "x"},
    ]
    turns.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    ingested = _cairn(data, "ingest", "--agent", "a", str(turns), code=3)
    inert(ingested.stdout)
    assert "bad\\r\\x1b[2Jid" in inert(ingested.stderr)

    recalled = _cairn(data, "recall", "--agent", "a", "oolong tea")
    out = inert(recalled.stdout)
    for escaped in ("\\x1b]0;pwned\\x07", "\\x1b[2J", "\\x9b31m", "\\rOVERWRITTEN"):
        assert escaped in out
    assert "\\u202egnp.exe\\x08\\x7f \\U000e0069\\U000e0067 end" in out
    inert(recalled.stderr)

    as_json = _cairn(data, "recall", "--agent", "a", "oolong tea", "--json")
    items = json.loads(inert(as_json.stdout))["items"]
    assert PAYLOAD in [item["text"] for item in items]  # exact after decoding

    directive = "Reply in French \x1b]0;pwned\x07 \u202eevil\x9b2J"
    added = _cairn(data, "directives", "add", "--agent", "a", directive)
    listed = _cairn(data, "directives", "list", "--agent", "a")
    for result in (added, listed):
        assert "Reply in French \\x1b]0;pwned\\x07" in inert(result.stdout)

    exported = inert(_cairn(data, "export", "-").stdout)
    texts = [json.loads(line).get("text") for line in exported.splitlines()]
    assert PAYLOAD in texts

    missing = _cairn(data, "ingest", "--agent", "a", "x\x1b[2J\u202e.jsonl", code=2)
    assert "x\\x1b[2J\\u202e.jsonl" in inert(missing.stderr)
