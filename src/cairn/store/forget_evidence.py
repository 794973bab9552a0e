"""Forgetting stored turns: the evidence row, every copy of its words, and what only it taught.

One transaction, in the caller's writer (tests/runtime/test_forget_evidence.py):

- the rows go (a whole message, or one segment when a segment's ID is named); their FTS
  rows and stored vectors go with them through the delete triggers, their claim sources and
  aliases by cascade;
- hash-only evidence tombstones of every ID the rows answered to and of their normalised
  text keep a replay, an import and the same words under a new ID out;
- a claim learned only from these rows is tombstoned and deleted; a claim other evidence
  still supports keeps that evidence and loses only this source;
- a claim whose own wording came only from these rows goes too, though claims merged into
  it left it their evidence: those claims are let go and their turns extracted again, so
  what they said comes back in their own words and the forgotten wording nowhere;
- the turns indexed and embedded *with* a forgotten turn as their context are re-indexed
  without it and lose their vector (re-embedded without it by the embedding sweep), so the
  forgotten words match nowhere;
- the event rowid floor rises, so a deleted rowid is never given to a later turn;
- both lexical indexes are purged (cairn.store.fts_purge): the turn's own rows, and what
  claims learned from it left in the claim index, even claims gone before the forget.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING

import attrs

from cairn import crashpoints
from cairn.store.conflicts import reinstate_losers, superseded_by
from cairn.store.dirty import mark_dirty
from cairn.store.evidence import event_fts_row, write_event_fts
from cairn.store.extraction_state import ExtractionState
from cairn.store.forget_lineage import forget_derived_reflections
from cairn.store.fts_purge import request_fts_purge
from cairn.store.merge import (
    own_sources,
    release_merged_sources,
    release_survivor,
    tombstone_merged,
)
from cairn.store.succession import chains_of, reorder_chains
from cairn.store.tombstones import (
    event_content_hash,
    event_id_hash,
    write_evidence_tombstones,
    write_tombstone,
)

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    import apsw

    from cairn.domain.ids import AgentId

__all__ = [
    "EvidenceRemoval",
    "delete_evidence",
    "raise_event_rowid_floor",
    "resolve_evidence",
]


@attrs.frozen
class EvidenceRemoval:
    """What deleting evidence rows did, for the result and for the vector projection."""

    event_ids: tuple[str, ...]
    event_rowids: tuple[int, ...]
    claims_removed: tuple[tuple[int, str], ...]
    claims_kept: tuple[str, ...]
    # Turns that were indexed with a forgotten one as context: re-indexed, to re-embed.
    reindexed: tuple[int, ...]
    # Turns re-opened for extraction: claims merged into a forgotten survivor are learned
    # again from them (cairn.store.merge.release_survivor).
    extract_again: tuple[int, ...] = ()


def resolve_evidence(
    connection: apsw.Connection, agent_id: AgentId, event_id: str
) -> list[int] | None:
    """The rows an ID names: a message's every segment, one segment, or the message a
    merged repeat's alias points to; ``None`` when the ID names no stored turn."""
    row = connection.execute(
        "SELECT rowid, segment_of FROM events WHERE agent_id = ? AND event_id = ?",
        (agent_id, event_id),
    ).fetchone()
    if row is None:
        alias = connection.execute(
            "SELECT event_rowid FROM event_aliases WHERE agent_id = ? AND event_id = ?",
            (agent_id, event_id),
        ).fetchone()
        if alias is None:
            return None
        rowid = int(alias[0])
    elif row[1] is not None:
        return [int(row[0])]  # a later segment, named by its own ID
    else:
        rowid = int(row[0])
    return [rowid] + [
        int(r[0])
        for r in connection.execute(
            "SELECT rowid FROM events WHERE agent_id = ? AND segment_of = ?",
            (agent_id, rowid),
        )
    ]


def raise_event_rowid_floor(connection: apsw.Connection, rowid: int) -> None:
    connection.execute(
        "INSERT INTO rowid_floors (table_name, floor) VALUES ('events', ?)"
        " ON CONFLICT DO UPDATE SET floor = max(floor, excluded.floor)",
        (rowid,),
    )


def _reindex_replies(
    connection: apsw.Connection, agent_id: AgentId, rowids: Sequence[int]
) -> tuple[int, ...]:
    wanted = json.dumps(list(rowids))
    # Driven from the forgotten rows through index events_context, never the agent's turns.
    replies = connection.execute(
        "SELECT e.rowid, e.speaker, e.text, e.occurred_at FROM json_each(?) AS gone"
        " CROSS JOIN events e ON e.context_rowid = gone.value WHERE e.agent_id = ?"
        " AND e.rowid NOT IN (SELECT value FROM json_each(?))",
        (json.dumps(sorted(set(rowids))), agent_id, wanted),
    ).fetchall()
    for rowid, speaker, text, occurred_at in replies:
        connection.execute(
            "UPDATE events SET context_rowid = NULL WHERE rowid = ?", (rowid,)
        )
        connection.execute("DELETE FROM event_fts WHERE rowid = ?", (rowid,))
        write_event_fts(
            connection,
            int(rowid),  # type: ignore[arg-type]
            event_fts_row(
                agent_id,
                None if speaker is None else str(speaker),
                str(text),
                dt.datetime.fromisoformat(str(occurred_at)),
                None,
            ),
        )
        # Its vector was embedded with the forgotten words: the sweep embeds it again.
        connection.execute(
            "DELETE FROM embeddings WHERE agent_id = ? AND target = 'event'"
            " AND target_rowid = ?",
            (agent_id, rowid),
        )
    return tuple(int(row[0]) for row in replies)  # type: ignore[arg-type]


def _extract_again(
    connection: apsw.Connection, agent_id: AgentId, rowids: Collection[int]
) -> None:
    """Turns whose claims were let go with a forgotten survivor are extracted again
    (their claims come back from their own words; what else they taught is stored and
    found again as it is)."""
    if not rowids:
        return
    connection.execute(
        "UPDATE events SET extracted = ?, batch_id = NULL WHERE agent_id = ?"
        " AND extracted = ? AND rowid IN (SELECT value FROM json_each(?))",
        (
            ExtractionState.PENDING.value,
            agent_id,
            ExtractionState.EXTRACTED.value,
            json.dumps(sorted(rowids)),
        ),
    )


def delete_evidence(
    connection: apsw.Connection,
    agent_id: AgentId,
    rowids: Sequence[int],
    now: dt.datetime,
    *,
    tombstone_content: bool,
) -> EvidenceRemoval:
    """Delete evidence rows and every trace of them; the caller owns the transaction.

    ``tombstone_content``: also tombstone the rows' normalised text (an explicit forget of
    a turn). A clear tombstones IDs only, so a later "thanks" or "ok" is still stored.
    """
    stamp = now.astimezone(dt.UTC).isoformat()
    wanted = json.dumps(list(rowids))
    rows = connection.execute(
        "SELECT rowid, event_id, text FROM events WHERE agent_id = ?"
        " AND rowid IN (SELECT value FROM json_each(?))",
        (agent_id, wanted),
    ).fetchall()
    if not rows:
        return EvidenceRemoval((), (), (), (), ())
    event_ids = [str(row[1]) for row in rows]
    aliases = [
        str(row[0])
        for row in connection.execute(
            "SELECT event_id FROM event_aliases WHERE agent_id = ?"
            " AND event_rowid IN (SELECT value FROM json_each(?))",
            (agent_id, wanted),
        )
    ]
    hashes = [event_id_hash(agent_id, event_id) for event_id in event_ids + aliases]
    if tombstone_content:
        hashes += [event_content_hash(agent_id, str(row[2])) for row in rows]
    write_evidence_tombstones(connection, agent_id, hashes, stamp)
    crashpoints.reach(
        "forget.after_tombstone" if tombstone_content else "clear.after_tombstone"
    )

    # Claims citing the rows: those with no other evidence go (tombstoned), the rest keep
    # it. A claim whose own wording came only from these rows goes too, though claims
    # merged into it left it other evidence: they are let go to be learned again from
    # their own turns (cairn.store.merge.release_survivor). A claim the user added stands
    # on the user's word, not on a turn (one that said it too, or whose claim merged into
    # it): it only loses these sources. A model's claim (a remember, a reflection) rests
    # on the turns it cites like an extracted one.
    gone = set(rowids)
    removed: list[tuple[int, str]] = []
    kept: list[str] = []
    detached: list[int] = []
    relearn: set[int] = set()
    citing = connection.execute(
        "SELECT c.rowid, c.claim_id, c.provenance_key, c.content_hash,"
        " c.origin = 'user',"
        " EXISTS (SELECT 1 FROM claim_sources o WHERE o.claim_rowid = c.rowid"
        "  AND o.event_rowid NOT IN (SELECT value FROM json_each(?2)))"
        " FROM claims c WHERE c.agent_id = ?1 AND c.rowid IN (SELECT s.claim_rowid"
        "  FROM claim_sources s WHERE s.event_rowid IN (SELECT value FROM json_each(?2)))",
        (agent_id, wanted),
    ).fetchall()
    own = own_sources(connection, [int(row[0]) for row in citing])  # type: ignore[arg-type]
    for claim_rowid, claim_id, provenance, content, by_user, other in citing:
        rowid = int(claim_rowid)  # type: ignore[arg-type]
        wording_gone = bool(own[rowid]) and own[rowid] <= gone
        if (other and not wording_gone) or by_user:
            kept.append(str(claim_id))
            detached.append(rowid)
            continue
        write_tombstone(connection, agent_id, str(provenance), str(content), stamp)
        removed.append((rowid, str(claim_id)))
        if other:
            relearn.update(release_survivor(connection, agent_id, rowid, gone))
    removed += forget_derived_reflections(
        connection, agent_id, [claim_rowid for claim_rowid, _ in removed], stamp
    )
    # Merged-away claims (cairn.store.merge) stay forgotten as if they had not merged:
    # with their survivor, and when these turns were all they came from.
    tombstone_merged(connection, agent_id, [rowid for rowid, _ in removed], stamp)
    release_merged_sources(connection, agent_id, rowids, stamp)
    chains = chains_of(connection, [claim_rowid for claim_rowid, _ in removed])
    losers = superseded_by(connection, agent_id, [rowid for rowid, _ in removed])
    for claim_rowid, _ in removed:
        connection.execute("DELETE FROM claims WHERE rowid = ?", (claim_rowid,))
        connection.execute(
            "DELETE FROM dirty_work WHERE agent_id = ? AND claim_rowid = ?",
            (agent_id, claim_rowid),
        )
        connection.execute(
            "DELETE FROM derivations WHERE agent_id = ?"
            " AND (parent_rowid = ? OR child_rowid = ?)",
            (agent_id, claim_rowid, claim_rowid),
        )
    reorder_chains(connection, agent_id, chains, stamp)
    reinstate_losers(connection, agent_id, losers, stamp)
    # A claim that lost a source changed: its evidence (and evidence time) is less.
    mark_dirty(connection, agent_id, detached)

    _extract_again(connection, agent_id, relearn)

    reindexed = _reindex_replies(connection, agent_id, rowids)
    connection.execute(
        "DELETE FROM hidden_evidence WHERE agent_id = ?"
        " AND event_rowid IN (SELECT value FROM json_each(?))",
        (agent_id, wanted),
    )
    connection.execute(
        "DELETE FROM events WHERE agent_id = ? AND rowid IN (SELECT value FROM json_each(?))",
        (agent_id, wanted),
    )
    raise_event_rowid_floor(connection, max(int(str(row[0])) for row in rows))
    request_fts_purge(connection, "event_fts", now)
    # Even when no claim goes now: the claim index may still hold the words of a claim
    # learned from these rows and deleted earlier without a purge (one a merge absorbed,
    # one a rewind deleted to derive again, a row re-keyed), whose tokens stay in the
    # contentless index until it is rewritten.
    request_fts_purge(connection, "claim_fts", now)
    return EvidenceRemoval(
        tuple(event_ids),
        tuple(int(str(row[0])) for row in rows),
        tuple(removed),
        tuple(kept),
        reindexed,
        tuple(sorted(relearn)),
    )
