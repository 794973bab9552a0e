"""Near-duplicate merges: one claim holding the sources of two, and the identity of the
one merged away (schema 0011, ``claim_merges``).

A merge (:func:`merge_into`, in the caller's transaction) gives the survivor the union of
both claims' source spans and the higher confidence, deletes the absorbed row (its FTS row
and vector by trigger, its sources by cascade) and keeps only its identity: its claim ID,
provenance key and content hash, and the event rowids it cited, with a ``merge``
derivation from it to the survivor.

That identity keeps the merge whole on every later path:

- intake (:func:`merged_identity`): a replay of the absorbed claim's turn, or the same
  words from a new turn in the scope, adds its sources to the survivor instead of storing
  the absorbed claim again; an import of an older export finds it the same way;
- forgetting (:func:`tombstone_merged`, :func:`release_merged_sources`): forgetting the
  survivor tombstones the absorbed hashes too, and forgetting the turns the absorbed claim
  alone came from tombstones its hashes, exactly as if it had never been merged;
  forgetting every turn the survivor's own wording came from (:func:`own_sources`) takes
  the survivor, and the claims merged into it that still have turns are let go to be
  learned again from them (:func:`release_survivor`);
  :func:`survivor_of` resolves a forget by the absorbed claim's old ID;
- export and import (:func:`merge_records`, :func:`restore_merge`).
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING

import attrs

from cairn.domain.metadata import metadata_from_json
from cairn.store.fts import query_terms
from cairn.store.metadata import absorb_claim_metadata
from cairn.store.search import LexicalSearcher
from cairn.store.succession import (
    chains_of,
    order_succession,
    refresh_evidence_time,
    reorder_chains,
)
from cairn.store.tombstones import write_tombstone

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence
    from collections.abc import Set as AbstractSet

    import apsw

    from cairn.domain.ids import AgentId
    from cairn.domain.scope import Scope

__all__ = [
    "MergeRow",
    "MergedIdentity",
    "add_merged_sources",
    "adjacent_in_chain",
    "claim_vectors",
    "lexical_neighbours",
    "load_merge_rows",
    "merge_into",
    "merge_records",
    "merged_identity",
    "own_sources",
    "release_merged_sources",
    "release_survivor",
    "restore_merge",
    "sole_in_chain",
    "survivor_of",
    "tombstone_merged",
]

# Kinds with their own projections: never merged.
_PROTECTED = ("persona", "working")


@attrs.frozen
class MergeRow:
    """A claim as the merge pass compares it (any lifecycle)."""

    rowid: int
    claim_id: str
    kind: str
    lifecycle: str
    origin: str
    text: str
    subject: str | None
    predicate: str | None
    confidence: float
    scope: str
    scope_key: str | None
    revision: int
    content_hash: str
    # valid_from, valid_until, precision, timezone, recurrence: equal or no merge.
    temporal: tuple[object, ...]
    evidence_at: str | None
    # Whether a source turn is the user's, and whether every one is the assistant's.
    user_sourced: bool
    assistant_only: bool

    @property
    def keyed(self) -> bool:
        return self.subject is not None and self.predicate is not None


def load_merge_rows(
    connection: apsw.Connection, agent_id: AgentId, rowids: Iterable[int]
) -> dict[int, MergeRow]:
    """The agent's claims among ``rowids``, but persona/working rows and claims under a
    pending clear."""
    rows: dict[int, MergeRow] = {}
    for row in connection.execute(
        "SELECT c.rowid, c.claim_id, c.kind, c.lifecycle, c.origin, c.text, c.subject,"
        " c.predicate, c.confidence, c.scope, c.scope_key, c.revision, c.content_hash,"
        " c.valid_from, c.valid_until, c.time_precision, c.timezone, c.recurrence,"
        " c.evidence_at,"
        " EXISTS (SELECT 1 FROM claim_sources s JOIN events e ON e.rowid = s.event_rowid"
        "  WHERE s.claim_rowid = c.rowid AND e.role = 'user'),"
        " coalesce((SELECT min(e.role = 'assistant') FROM claim_sources s"
        "  JOIN events e ON e.rowid = s.event_rowid WHERE s.claim_rowid = c.rowid), 0)"
        " FROM json_each(?) AS wanted CROSS JOIN claims c ON c.rowid = wanted.value"
        " WHERE c.agent_id = ? AND c.kind NOT IN (?, ?)"
        " AND NOT EXISTS (SELECT 1 FROM clear_jobs j WHERE j.agent_id = c.agent_id"
        "  AND j.phase <> 'done' AND c.rowid <= j.rowid_cutoff)",
        (json.dumps(sorted(set(rowids))), agent_id, *_PROTECTED),
    ):
        rowid = int(row[0])
        rows[rowid] = MergeRow(
            rowid=rowid,
            claim_id=str(row[1]),
            kind=str(row[2]),
            lifecycle=str(row[3]),
            origin=str(row[4]),
            text=str(row[5]),
            subject=None if row[6] is None else str(row[6]),
            predicate=None if row[7] is None else str(row[7]),
            confidence=float(row[8]),
            scope=str(row[9]),
            scope_key=None if row[10] is None else str(row[10]),
            revision=int(row[11]),
            content_hash=str(row[12]),
            temporal=tuple(row[13:18]),
            evidence_at=None if row[18] is None else str(row[18]),
            user_sourced=bool(row[19]),
            assistant_only=bool(row[20]),
        )
    return rows


def lexical_neighbours(
    connection: apsw.Connection,
    agent_id: AgentId,
    scope: Scope,
    text: str,
    limit: int,
) -> list[int]:
    """At most ``limit`` claim rowids of the same agent and scope sharing words with
    ``text``, best first (the claim index is namespaced by agent and scope, so no other
    scope's row can match)."""
    terms = query_terms(text)
    if not terms:
        return []
    result = LexicalSearcher(connection).search_claims(agent_id, terms, [scope], limit)
    return [hit.rowid for hit in result.hits]


def claim_vectors(
    connection: apsw.Connection, rowids: Iterable[int]
) -> dict[int, dict[str, tuple[bytes, int]]]:
    """Each claim's own stored vectors: identity key → (f16 blob, dimension). A claim
    learned from turns has none (it is found through its turns' vectors)."""
    vectors: dict[int, dict[str, tuple[bytes, int]]] = {}
    for rowid, key, blob, dimension in connection.execute(
        "SELECT m.target_rowid, m.identity_key, m.vector, i.dimension"
        " FROM json_each(?) AS wanted CROSS JOIN embeddings m"
        " ON m.target = 'claim' AND m.target_rowid = wanted.value"
        " JOIN vector_identity i ON i.identity_key = m.identity_key",
        (json.dumps(sorted(set(rowids))),),
    ):
        vectors.setdefault(int(rowid), {})[str(key)] = (bytes(blob), int(dimension))
    return vectors


def sole_in_chain(
    connection: apsw.Connection, agent_id: AgentId, row: MergeRow
) -> bool:
    """Whether ``row`` is the only claim of its attribute chain (or has no attribute)."""
    if not row.keyed:
        return True
    other = connection.execute(
        "SELECT 1 FROM claims WHERE agent_id = ? AND subject = ? AND predicate = ?"
        " AND scope = ? AND scope_key IS ? AND lifecycle IN ('active', 'superseded')"
        " AND rowid <> ? LIMIT 1",
        (agent_id, row.subject, row.predicate, row.scope, row.scope_key, row.rowid),
    ).fetchone()
    return other is None


def adjacent_in_chain(
    connection: apsw.Connection, agent_id: AgentId, a: MergeRow, b: MergeRow
) -> bool:
    """Whether no other value of the (shared) attribute lies between ``a`` and ``b`` by
    evidence time: merging them then changes no "what held before"."""
    first, last = sorted((a, b), key=lambda row: (row.evidence_at or "", row.rowid))
    between = connection.execute(
        "SELECT 1 FROM claims WHERE agent_id = ? AND subject = ? AND predicate = ?"
        " AND scope = ? AND scope_key IS ? AND lifecycle IN ('active', 'superseded')"
        " AND rowid NOT IN (?, ?)"
        " AND (coalesce(evidence_at, ''), rowid) > (?, ?)"
        " AND (coalesce(evidence_at, ''), rowid) < (?, ?) LIMIT 1",
        (
            agent_id,
            a.subject,
            a.predicate,
            a.scope,
            a.scope_key,
            a.rowid,
            b.rowid,
            first.evidence_at or "",
            first.rowid,
            last.evidence_at or "",
            last.rowid,
        ),
    ).fetchone()
    return between is None


def merge_into(
    connection: apsw.Connection,
    agent_id: AgentId,
    survivor: int,
    absorbed: int,
    now: dt.datetime,
) -> None:
    """Merge claim ``absorbed`` into ``survivor``; the caller owns the transaction and has
    re-validated both rows."""
    stamp = now.astimezone(dt.UTC).isoformat()
    row = connection.execute(
        "SELECT claim_id, provenance_key, content_hash, confidence, metadata FROM claims"
        " WHERE rowid = ? AND agent_id = ?",
        (absorbed, agent_id),
    ).fetchone()
    if row is None:
        return
    claim_id, provenance, content, confidence, metadata = row
    # The survivor keeps what the caller said about either claim.
    absorb_claim_metadata(connection, survivor, metadata_from_json(metadata))
    sources = sorted(
        {
            int(event)
            for (event,) in connection.execute(
                "SELECT event_rowid FROM claim_sources WHERE claim_rowid = ?",
                (absorbed,),
            )
        }
    )
    connection.execute(
        "INSERT OR IGNORE INTO claim_sources (claim_rowid, event_rowid, span_start,"
        " span_end) SELECT ?, event_rowid, span_start, span_end FROM claim_sources"
        " WHERE claim_rowid = ?",
        (survivor, absorbed),
    )
    connection.execute(
        "UPDATE claims SET confidence = max(confidence, ?), revision = revision + 1,"
        " updated_at = ? WHERE rowid = ?",
        (confidence, stamp, survivor),
    )
    # What the absorbed claim had absorbed before is the survivor's now.
    connection.execute(
        "UPDATE claim_merges SET survivor_rowid = ? WHERE survivor_rowid = ?",
        (survivor, absorbed),
    )
    connection.execute(
        "INSERT INTO claim_merges (agent_id, survivor_rowid, absorbed_rowid, absorbed_id,"
        " provenance_key, content_hash, sources, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            agent_id,
            survivor,
            absorbed,
            claim_id,
            provenance,
            content,
            json.dumps(sources),
            stamp,
        ),
    )
    chains = chains_of(connection, [absorbed])
    # Its supersede edges go with it (its chain is re-ordered below); the rest of its
    # lineage (claims merged into it, reflections drawn from it) is the survivor's now.
    connection.execute(
        "DELETE FROM derivations WHERE agent_id = ? AND relation = 'supersede'"
        " AND (parent_rowid = ? OR child_rowid = ?)",
        (agent_id, absorbed, absorbed),
    )
    for column in ("child_rowid", "parent_rowid"):
        connection.execute(
            f"UPDATE derivations SET {column} = ? WHERE agent_id = ? AND {column} = ?",  # noqa: S608 - a fixed column name
            (survivor, agent_id, absorbed),
        )
    connection.execute(
        "INSERT INTO derivations (agent_id, parent_rowid, child_rowid, relation,"
        " created_at) VALUES (?, ?, ?, 'merge', ?)",
        (agent_id, absorbed, survivor, stamp),
    )
    connection.execute("DELETE FROM claims WHERE rowid = ?", (absorbed,))
    connection.execute(
        "DELETE FROM dirty_work WHERE agent_id = ? AND claim_rowid = ?",
        (agent_id, absorbed),
    )
    refresh_evidence_time(connection, survivor)
    reorder_chains(connection, agent_id, chains, stamp)
    order_succession(connection, agent_id, survivor, stamp)


@attrs.frozen
class MergedIdentity:
    """A claim identity found among merged-away claims."""

    survivor: int
    survivor_lifecycle: str
    by_provenance: bool
    provenance_key: str
    """The merged-away claim's provenance key (its row in ``claim_merges``)."""


def merged_identity(
    connection: apsw.Connection, agent_id: AgentId, provenance: str, content: str
) -> MergedIdentity | None:
    """The survivor holding a merged-away claim with this provenance key (the same
    extraction again) or content hash (the same words in the same scope)."""
    row = connection.execute(
        "SELECT m.survivor_rowid, c.lifecycle, m.provenance_key = ?2, m.provenance_key"
        " FROM claim_merges m"
        " JOIN claims c ON c.rowid = m.survivor_rowid"
        " WHERE m.agent_id = ?1 AND (m.provenance_key = ?2 OR m.content_hash = ?3)"
        " ORDER BY m.provenance_key = ?2 DESC, c.lifecycle = 'active' DESC LIMIT 1",
        (agent_id, provenance, content),
    ).fetchone()
    if row is None:
        return None
    return MergedIdentity(int(row[0]), str(row[1]), bool(row[2]), str(row[3]))


def add_merged_sources(
    connection: apsw.Connection,
    agent_id: AgentId,
    identity: MergedIdentity,
    event_rowids: Iterable[int],
) -> None:
    """The merged-away claim ``identity`` was said again by turns ``event_rowids`` (their
    spans are the survivor's now): they are its sources too, so forgetting the survivor's
    own turns leaves its wording to them (:func:`release_survivor`)."""
    row = connection.execute(
        "SELECT sources FROM claim_merges WHERE agent_id = ? AND provenance_key = ?",
        (agent_id, identity.provenance_key),
    ).fetchone()
    if row is None:
        return
    sources = sorted({*json.loads(str(row[0])), *event_rowids})
    connection.execute(
        "UPDATE claim_merges SET sources = ? WHERE agent_id = ? AND provenance_key = ?",
        (json.dumps(sources), agent_id, identity.provenance_key),
    )


def own_sources(
    connection: apsw.Connection, claim_rowids: Sequence[int]
) -> dict[int, set[int]]:
    """The turns each claim's own wording came from: its sources less those it holds
    for the claims merged into it (a turn both said counts as theirs)."""
    own: dict[int, set[int]] = {rowid: set() for rowid in claim_rowids}
    for claim_rowid, event_rowid in connection.execute(
        "SELECT s.claim_rowid, s.event_rowid FROM json_each(?) AS c"
        " CROSS JOIN claim_sources s ON s.claim_rowid = c.value"
        " WHERE NOT EXISTS (SELECT 1 FROM claim_merges m, json_each(m.sources) e"
        "  WHERE m.survivor_rowid = s.claim_rowid AND e.value = s.event_rowid)",
        (json.dumps(list(claim_rowids)),),
    ):
        own[int(claim_rowid)].add(int(event_rowid))
    return own


def release_survivor(
    connection: apsw.Connection,
    agent_id: AgentId,
    survivor: int,
    gone: AbstractSet[int],
) -> list[int]:
    """Survivor ``survivor`` is being forgotten with turns ``gone``, every turn its own
    wording came from: the claims merged into it that still have other turns are let
    go, untombstoned, to be learned again from those turns (returned, to extract
    again), as if they had never merged. Their words were never the survivor's, and
    the survivor's wording kept on their turns would keep the forgotten turn's words.
    Claims merged into it with no other turn stay, to be tombstoned with it."""
    turns: set[int] = set()
    for provenance, sources in connection.execute(
        "SELECT provenance_key, sources FROM claim_merges"
        " WHERE agent_id = ? AND survivor_rowid = ?",
        (agent_id, survivor),
    ).fetchall():
        left = {int(event) for event in json.loads(str(sources))} - gone
        if not left:
            continue
        turns |= left
        connection.execute(
            "DELETE FROM claim_merges WHERE agent_id = ? AND provenance_key = ?",
            (agent_id, provenance),
        )
    return sorted(turns)


def survivor_of(
    connection: apsw.Connection, agent_id: AgentId, absorbed_id: str
) -> str | None:
    """The claim ID now holding the merged-away claim ``absorbed_id``, if any."""
    row = connection.execute(
        "SELECT c.claim_id FROM claim_merges m JOIN claims c ON c.rowid = m.survivor_rowid"
        " WHERE m.agent_id = ? AND m.absorbed_id = ?",
        (agent_id, absorbed_id),
    ).fetchone()
    return None if row is None else str(row[0])


def tombstone_merged(
    connection: apsw.Connection,
    agent_id: AgentId,
    survivors: Sequence[int],
    stamp: str,
) -> int:
    """Claims ``survivors`` are being forgotten or cleared: tombstone what they absorbed
    (the rows go with the survivors by cascade). Returns how many."""
    rows = connection.execute(
        "SELECT provenance_key, content_hash FROM json_each(?) AS gone"
        " CROSS JOIN claim_merges m ON m.survivor_rowid = gone.value"
        " WHERE m.agent_id = ?",
        (json.dumps(list(survivors)), agent_id),
    ).fetchall()
    for provenance, content in rows:
        write_tombstone(connection, agent_id, str(provenance), str(content), stamp)
    return len(rows)


def release_merged_sources(
    connection: apsw.Connection,
    agent_id: AgentId,
    event_rowids: Sequence[int],
    stamp: str,
) -> None:
    """Turns ``event_rowids`` are being deleted: a merged-away claim they were the last
    sources of is tombstoned, as it would have been unmerged (the survivor keeps its
    other evidence); one with other sources left only forgets these."""
    gone = set(event_rowids)
    if not gone:
        return
    rows = connection.execute(
        "SELECT m.provenance_key, m.content_hash, m.sources FROM claim_merges m"
        " WHERE m.agent_id = ?1 AND EXISTS (SELECT 1 FROM json_each(m.sources) s"
        "  WHERE s.value IN (SELECT value FROM json_each(?2)))",
        (agent_id, json.dumps(sorted(gone))),
    ).fetchall()
    for provenance, content, sources in rows:
        left = [event for event in json.loads(str(sources)) if event not in gone]
        if left:
            connection.execute(
                "UPDATE claim_merges SET sources = ? WHERE agent_id = ?"
                " AND provenance_key = ?",
                (json.dumps(left), agent_id, provenance),
            )
            continue
        write_tombstone(connection, agent_id, str(provenance), str(content), stamp)
        connection.execute(
            "DELETE FROM claim_merges WHERE agent_id = ? AND provenance_key = ?",
            (agent_id, provenance),
        )


# -- export and import -----------------------------------------------------------------------
def merge_records(
    connection: apsw.Connection, agent: AgentId, stable: str
) -> Iterator[dict[str, object]]:
    """The agent's merges as export records, in a fixed order; ``stable`` is the SQL
    condition on events ``e`` an export shows (a pending clear hides some)."""
    for (
        survivor,
        absorbed,
        provenance,
        content,
        sources,
        created_at,
    ) in connection.execute(
        "SELECT c.claim_id, m.absorbed_id, m.provenance_key, m.content_hash,"  # noqa: S608 - a fixed clause
        " (SELECT json_group_array(e.event_id) FROM (SELECT e.event_id FROM"
        "   json_each(m.sources) s JOIN events e ON e.rowid = s.value"
        f"   WHERE e.agent_id = m.agent_id AND {stable} ORDER BY e.rowid) e),"
        " m.created_at FROM claim_merges m JOIN claims c ON c.rowid = m.survivor_rowid"
        " WHERE m.agent_id = ? ORDER BY c.rowid, m.absorbed_id",
        (agent,),
    ):
        yield {
            "type": "merge",
            "agent": agent,
            "survivor": survivor,
            "absorbed": absorbed,
            "provenance_hash": provenance,
            "content_hash": content,
            "sources": json.loads(str(sources)),
            "created_at": created_at,
        }


def restore_merge(
    connection: apsw.Connection,
    agent: AgentId,
    survivor: int,
    absorbed_id: str,
    provenance: str,
    content: str,
    sources: Sequence[int],
    created_at: str,
) -> bool:
    """Store an imported merge; ``False`` when it is already stored."""
    if connection.execute(
        "SELECT 1 FROM claim_merges WHERE agent_id = ? AND provenance_key = ?",
        (agent, provenance),
    ).fetchone():
        return False
    # The absorbed row never existed here: its lineage edge gets a rowid of its own,
    # taken from the claims' sequence so no later claim is ever given it.
    reserved = connection.execute(
        "UPDATE sqlite_sequence SET seq = seq + 1 WHERE name = 'claims' RETURNING seq"
    ).fetchone()
    assert reserved is not None  # noqa: S101 - the survivor's insert started the sequence
    absorbed = int(reserved[0])
    connection.execute(
        "INSERT INTO claim_merges (agent_id, survivor_rowid, absorbed_rowid, absorbed_id,"
        " provenance_key, content_hash, sources, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            agent,
            survivor,
            absorbed,
            absorbed_id,
            provenance,
            content,
            json.dumps(sorted(set(sources))),
            created_at,
        ),
    )
    connection.execute(
        "INSERT INTO derivations (agent_id, parent_rowid, child_rowid, relation,"
        " created_at) VALUES (?, ?, ?, 'merge', ?)",
        (agent, absorbed, survivor, created_at),
    )
    return True
