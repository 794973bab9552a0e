"""A clear asked for while another clear of the same agent runs: the pending job is
extended to cover what was written between the two, and a step that read the job before
the extension does not finish it."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import apsw

from cairn.domain.claim import ClaimDraft, ClaimKind
from cairn.domain.evidence import Turn
from cairn.domain.ids import AgentId, EventId, SessionId
from cairn.store.agents import ensure_agent
from cairn.store.claims import insert_claims
from cairn.store.clear_jobs import (
    clear_batch,
    clear_lineage,
    finish_clear,
    pending_clear,
    start_clear,
)
from cairn.store.connection import open_connection
from cairn.store.evidence import insert_events, stored_turn

NOW = dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.UTC)
A = AgentId("a")


def _turn(connection: apsw.Connection, event_id: str, text: str) -> None:
    turn = Turn(EventId(event_id), SessionId("s1"), "user", text, NOW)
    insert_events(connection, A, [stored_turn(turn)], NOW)


def _stored(connection: apsw.Connection) -> list[str]:
    return [
        str(row[0])
        for row in connection.execute(
            "SELECT text FROM claims UNION ALL SELECT text FROM events"
        )
    ]


def test_a_second_clear_covers_what_was_written_since_the_first(tmp_path: Path) -> None:
    connection = open_connection(tmp_path / "cairn.db")
    try:
        with connection:
            ensure_agent(connection, A, NOW)
            insert_claims(
                connection,
                A,
                [
                    ClaimDraft(
                        ClaimKind.FACT, "The user's code word is Quillfeather.", ()
                    )
                ],
                {},
                NOW,
            )
            _turn(connection, "e1", "My locker code word is Quillfeather.")
            first, _ = start_clear(connection, A, NOW)
        with connection:
            # A turn taken in while the first clear runs, above its cutoff: that job
            # keeps it; the second clear, asked for after it, must not.
            _turn(connection, "e2", "My bicycle is called Thornbramble.")
            second, _ = start_clear(connection, A, NOW)
        assert second.job_id == first.job_id
        assert second.event_cutoff is not None
        assert first.event_cutoff is not None
        assert second.event_cutoff > first.event_cutoff
        assert second.phase == "claims"
        # A step that read the job before the second clear cannot finish it.
        with connection:
            assert finish_clear(connection, first) is None
        while (job := pending_clear(connection, A)) is not None:
            with connection:
                if job.phase == "claims":
                    clear_batch(connection, job, NOW)
                elif job.phase == "lineage":
                    clear_lineage(connection, job, NOW)
                else:
                    assert finish_clear(connection, job) is not None
        assert _stored(connection) == []
    finally:
        connection.close()
