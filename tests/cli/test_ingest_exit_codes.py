"""The exit-code contract of ``cairn ingest``: 0 everything stored; 3 some lines were
rejected, each with its line number, and every other line is stored; 5 a storage failure
stopped the file partway, the report says how many lines were stored and where it
stopped, and running the same file again once the fault is cleared stores the rest.
A bad line is never a lost file or a traceback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest
from tests.cli.conftest import Invoke, json_of, write_jsonl

from cairn.cli.app import EXIT_OK, EXIT_REJECTED, EXIT_STOPPED
from cairn.store.connection import open_connection

SECRET = "sk-proj-Qx7mN2pL9vR4tY6uI8oP0aS3dF5gH1jK"


def _line(event_id: str, text: str, **fields: Any) -> dict[str, Any]:
    return {"id": event_id, "session": "s1", "role": "user", "text": text, **fields}


def _good(count: int, prefix: str = "g", padding: str = "") -> list[dict[str, Any]]:
    return [
        _line(
            f"{prefix}-{i}",
            f"Line {i} of {prefix}: I planted {i} tulips in row {i}.{padding}",
        )
        for i in range(count)
    ]


# About 2 KB a line: storing a chunk of lines takes most of its pages, extracting it few.
PADDING = "".join(f" pad{j}" for j in range(300))


def _stored_ids(data: Path) -> set[str]:
    connection = open_connection(data / "cairn.db", readonly=True)
    try:
        return {
            str(row[0]) for row in connection.execute("SELECT event_id FROM events")
        }
    finally:
        connection.close()


def _page_count(data: Path) -> int:
    connection = open_connection(data / "cairn.db", readonly=True)
    try:
        return int(connection.execute("PRAGMA page_count").fetchone()[0])
    finally:
        connection.close()


def _rejected_lines(summary: dict[str, Any]) -> dict[int, str]:
    return {entry["line"]: entry["reason"] for entry in summary["rejected"]}


def test_a_deeply_nested_json_line_is_a_rejected_line_and_the_rest_is_stored(
    invoke: Invoke, tmp_path: Path
) -> None:
    deep = '{"id": "deep", "session": "s1", "role": "user", "text": ' + (
        "[" * 5000 + "]" * 5000 + "}"
    )
    digits = '{"id": "digits", "session": "s1", "role": "user", "text": ' + (
        "1" * 5000 + "}"
    )
    rows: list[Any] = [*_good(2), deep, digits, *_good(2, "h")]
    path = write_jsonl(tmp_path / "turns.jsonl", rows)
    result = invoke("ingest", "--agent", "a", str(path), "--json")
    assert result.exit_code == EXIT_REJECTED, result.stderr
    assert "Traceback" not in result.stderr
    summary = json_of(result)
    assert summary["ingested"] == 4
    reasons = _rejected_lines(summary)
    assert reasons[3] == "invalid JSON: nested too deeply"
    assert reasons[4].startswith("invalid JSON: Exceeds the limit")
    assert _stored_ids(tmp_path / "data") == {"g-0", "g-1", "h-0", "h-1"}


@pytest.mark.parametrize(
    "at",
    ["9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59"],
)
def test_a_calendar_edge_date_is_a_rejected_line_and_the_rest_is_stored(
    invoke: Invoke, tmp_path: Path, at: str
) -> None:
    rows = [
        *_good(2),
        _line("edge", "At the edge of the calendar.", at=at),
        *_good(1, "h"),
    ]
    path = write_jsonl(tmp_path / "turns.jsonl", rows)
    result = invoke("ingest", "--agent", "a", str(path), "--json")
    assert result.exit_code == EXIT_REJECTED, result.stderr
    summary = json_of(result)
    assert summary["ingested"] == 3
    assert summary["rejected"] == [
        {
            "line": 3,
            "id": "edge",
            "reason": summary["rejected"][0]["reason"],
        }
    ]
    assert "outside the supported calendar" in summary["rejected"][0]["reason"]
    assert _stored_ids(tmp_path / "data") == {"g-0", "g-1", "h-0"}


def test_bad_ids_are_rejected_lines_with_their_numbers(
    invoke: Invoke, tmp_path: Path
) -> None:
    rows = [
        *_good(1),
        _line("x" * 100_000, "An overlong ID."),
        _line("nul\u0000", "A NUL in the ID."),
        _line("ok", "A control character in the session.", session="s\u0007"),
        *_good(1, "h"),
    ]
    path = write_jsonl(tmp_path / "turns.jsonl", rows)
    result = invoke("ingest", "--agent", "a", str(path), "--json")
    assert result.exit_code == EXIT_REJECTED, result.stderr
    reasons = _rejected_lines(json_of(result))
    assert sorted(reasons) == [2, 3, 4]
    assert "at most 256" in reasons[2]
    assert "U+0000" in reasons[3]
    assert "U+0007" in reasons[4]
    assert _stored_ids(tmp_path / "data") == {"g-0", "h-0"}


def test_a_segment_shaped_id_before_a_long_message_rejects_one_line_not_the_file(
    invoke: Invoke, tmp_path: Path
) -> None:
    long_text = " ".join(f"word{i}" for i in range(1500))  # several 2400-byte segments
    rows = [*_good(600), _line("x#seg1", "A short turn."), _line("x", long_text)]
    path = write_jsonl(tmp_path / "turns.jsonl", rows)
    result = invoke("ingest", "--agent", "a", str(path), "--json")
    assert result.exit_code == EXIT_REJECTED, result.stderr
    summary = json_of(result)
    assert summary["ingested"] == 601
    assert list(_rejected_lines(summary)) == [601]
    stored = _stored_ids(tmp_path / "data")
    assert "x" in stored
    assert "x#seg1" in stored  # the long message's own second segment


def test_a_line_refused_for_the_whole_call_is_rejected_alone(
    invoke: Invoke, tmp_path: Path
) -> None:
    # A secret in an ID refuses the whole ingest call; the file goes on without the line.
    rows = [*_good(300), _line(f"msg-{SECRET}", "I like coffee."), *_good(300, "h")]
    path = write_jsonl(tmp_path / "turns.jsonl", rows)
    result = invoke("ingest", "--agent", "a", str(path), "--json")
    assert result.exit_code == EXIT_REJECTED, result.stderr
    summary = json_of(result)
    assert summary["ingested"] == 600
    assert list(_rejected_lines(summary)) == [301]
    assert SECRET not in result.stdout
    assert len(_stored_ids(tmp_path / "data")) == 600


@pytest.fixture
def page_limit() -> Iterator[dict[str, Any]]:
    """``limit["pages"]`` caps every new connection to ``limit["path"]`` at that many
    pages (``PRAGMA max_page_count``): a full disk, for real, at a chosen size."""
    limit: dict[str, Any] = {"path": None, "pages": None}

    def hook(connection: apsw.Connection) -> None:
        if limit["pages"] is not None and connection.filename == limit["path"]:
            connection.execute(f"PRAGMA max_page_count = {int(limit['pages'])}")

    apsw.connection_hooks.append(hook)
    try:
        yield limit
    finally:
        apsw.connection_hooks.remove(hook)


def test_a_full_disk_mid_file_reports_what_was_stored_and_a_rerun_stores_the_rest(
    invoke: Invoke, tmp_path: Path, page_limit: dict[str, Any]
) -> None:
    data = tmp_path / "data"
    tiny = write_jsonl(tmp_path / "tiny.jsonl", _good(1, "t"))
    assert invoke("ingest", "--agent", "a", str(tiny)).exit_code == EXIT_OK
    empty = _page_count(data)
    chunk = write_jsonl(tmp_path / "chunk.jsonl", _good(512, "f", PADDING))
    assert invoke("ingest", "--agent", "a", str(chunk)).exit_code == EXIT_OK
    # Room for about one more file chunk (512 lines) and its extraction, far from the
    # four of the file: a later chunk meets a full database while it is being stored.
    full = _page_count(data)
    page_limit["path"] = str(data / "cairn.db")
    page_limit["pages"] = full + (full - empty) * 3 // 2

    rows = _good(4 * 512, "g", PADDING)
    path = write_jsonl(tmp_path / "turns.jsonl", rows)
    result = invoke("ingest", "--agent", "a", str(path), "--json")

    assert result.exit_code == EXIT_STOPPED, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    summary = json_of(result)
    stopped = summary["stopped"]
    assert stopped["line"] in (513, 1025, 1537)
    assert stopped["stored_lines"] == stopped["line"] - 1 == summary["ingested"]
    assert f"stopped at line {stopped['line']}" in result.stderr
    assert "run the same command again" in result.stderr
    stored = {i for i in _stored_ids(data) if i.startswith("g-")}
    assert stored == {f"g-{i}" for i in range(stopped["stored_lines"])}

    page_limit["pages"] = None  # the disk has room again
    again = invoke("ingest", "--agent", "a", str(path), "--json")
    assert again.exit_code == EXIT_OK, again.stderr
    rerun = json_of(again)
    assert rerun["duplicate"] == stopped["stored_lines"]
    assert rerun["ingested"] == len(rows) - stopped["stored_lines"]
    assert {i for i in _stored_ids(data) if i.startswith("g-")} == {
        f"g-{i}" for i in range(len(rows))
    }


def test_lone_surrogate_escapes_are_rejected_lines_and_the_report_is_still_json(
    invoke: Invoke, tmp_path: Path
) -> None:
    base = '"session": "s1", "role": "user"'
    rows: list[Any] = [
        *_good(1),
        '{"id": "bad-text", ' + base + ', "text": "I like \\ud800 tea."}',
        '{"id": "bad-speaker", ' + base + ', "text": "Hi.", "speaker": "\\udfff"}',
        '{"id": "bad\\ud83d", ' + base + ', "text": "A broken pair in the ID."}',
        *_good(1, "h"),
    ]
    path = write_jsonl(tmp_path / "turns.jsonl", rows)
    result = invoke("ingest", "--agent", "a", str(path), "--json")
    assert result.exit_code == EXIT_REJECTED, result.stderr
    summary = json_of(result)
    reasons = _rejected_lines(summary)
    assert reasons[2].startswith("the text holds a lone surrogate (U+D800")
    assert reasons[3].startswith("the speaker holds a lone surrogate (U+DFFF")
    assert "U+D83D" in reasons[4]
    assert summary["rejected"][2]["id"] == "bad\\ud83d"
    assert _stored_ids(tmp_path / "data") == {"g-0", "h-0"}
