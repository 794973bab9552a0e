"""Embedding blobs with their identity: the source the vector projection is rebuilt from.

Rows name what they describe with :class:`~cairn.vectors.keys.EmbedTarget` (stored as its
value in ``embeddings.target``).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from cairn.store.evidence import load_events
from cairn.store.extraction_state import ExtractionState
from cairn.vectors.keys import EmbedTarget

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    import apsw

    from cairn.domain.ids import AgentId
    from cairn.vectors.identity import EmbeddingIdentity

__all__ = [
    "count_embeddings",
    "count_missing",
    "embedding_digest",
    "embeddings_by_identity",
    "ensure_identity",
    "iter_embeddings",
    "missing_targets",
    "store_embeddings",
]


def ensure_identity(connection: apsw.Connection, identity: EmbeddingIdentity) -> None:
    connection.execute(
        "INSERT INTO vector_identity (identity_key, provider, model, dimension, metric)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (
            identity.key(),
            identity.provider,
            identity.model,
            identity.dimension,
            identity.metric,
        ),
    )


_ALIVE = {
    EmbedTarget.CLAIM: "SELECT 1 FROM claims t WHERE t.rowid = ? AND t.agent_id = ?"
    # A claim under a pending clear gets no new vector (the clear's vector phase may be
    # past it).
    " AND NOT EXISTS (SELECT 1 FROM clear_jobs j WHERE j.agent_id = t.agent_id"
    " AND j.phase <> 'done' AND t.rowid <= j.rowid_cutoff)",
    EmbedTarget.EVENT: "SELECT 1 FROM events t WHERE t.rowid = ? AND t.agent_id = ?",
}


def embedding_digest(text: str) -> str:
    """What an embedding was computed from, in short: a commit compares it with the
    target's text as it is now."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def _current_digests(
    connection: apsw.Connection,
    agent_id: AgentId,
    rows: Sequence[tuple[EmbedTarget, int, bytes]],
) -> dict[tuple[EmbedTarget, int], str]:
    """The digest of what each target would be embedded from now (absent: not served)."""
    current: dict[tuple[EmbedTarget, int], str] = {}
    claims = [rowid for target, rowid, _ in rows if target is EmbedTarget.CLAIM]
    for rowid in claims:
        row = connection.execute(
            "SELECT text FROM claims WHERE rowid = ? AND agent_id = ?",
            (rowid, agent_id),
        ).fetchone()
        if row is not None:
            current[EmbedTarget.CLAIM, rowid] = embedding_digest(str(row[0]))
    events = [rowid for target, rowid, _ in rows if target is EmbedTarget.EVENT]
    for rowid, event in load_events(connection, agent_id, events).items():
        current[EmbedTarget.EVENT, rowid] = embedding_digest(event.embedding_text())
    return current


def store_embeddings(
    connection: apsw.Connection,
    agent_id: AgentId,
    identity: EmbeddingIdentity,
    rows: Sequence[tuple[EmbedTarget, int, bytes]],
    digests: Sequence[str] | None = None,
) -> list[tuple[EmbedTarget, int]]:
    """Upsert ``(target, rowid, blob)`` rows whose target still exists (not forgotten,
    cleared or withdrawn meanwhile); return the ``(target, rowid)`` pairs stored, which are
    the only ones the in-memory projection may take.

    With ``digests`` (:func:`embedding_digest` of each row's embedded text), a row whose
    target would now be embedded from other text is not stored either: a forget that
    took the words of the turn a reply answers deleted the reply's vector, and a vector
    computed before it, from those words, must not come back. The sweep embeds it anew.
    """
    ensure_identity(connection, identity)
    current = None if digests is None else _current_digests(connection, agent_id, rows)
    stored: list[tuple[EmbedTarget, int]] = []
    for index, (target, rowid, blob) in enumerate(rows):
        alive = connection.execute(_ALIVE[target], (rowid, agent_id)).fetchone()
        if alive is None:
            continue
        if (
            current is not None
            and digests is not None
            and current.get((target, rowid)) != digests[index]
        ):
            continue
        connection.execute(
            "INSERT INTO embeddings (identity_key, target, target_rowid, agent_id, vector)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET vector = excluded.vector",
            (identity.key(), target.value, rowid, agent_id, blob),
        )
        stored.append((target, rowid))
    return stored


def count_embeddings(
    connection: apsw.Connection, agent_id: AgentId, identity: EmbeddingIdentity
) -> int:
    row = connection.execute(
        "SELECT count(*) FROM embeddings WHERE agent_id = ? AND identity_key = ?",
        (agent_id, identity.key()),
    ).fetchone()
    return 0 if row is None else int(row[0])


def iter_embeddings(
    connection: apsw.Connection, agent_id: AgentId, identity: EmbeddingIdentity
) -> Iterator[tuple[EmbedTarget, int, bytes]]:
    for target, rowid, blob in connection.execute(
        "SELECT target, target_rowid, vector FROM embeddings"
        " WHERE agent_id = ? AND identity_key = ?",
        (agent_id, identity.key()),
    ):
        yield EmbedTarget(str(target)), int(rowid), bytes(blob)


def missing_targets(
    connection: apsw.Connection,
    agent_id: AgentId,
    identity: EmbeddingIdentity,
    limit: int,
) -> list[tuple[EmbedTarget, int, str | None]]:
    """Extracted events (text ``None``: the caller builds it from the event) and claims
    without evidence (with their text) that recall reads, active or superseded, and that
    have no embedding of ``identity`` yet.

    Found at warm-up, so work lost in a crash between commit and embedding is redone, and
    history that arrived without its vector (an import, a switch of embedder) is found by
    the vector path as where it came from.
    """
    key = identity.key()
    rows = connection.execute(
        # Claims are found through the vector of the evidence they cite (design/vectors.md);
        # only a claim without evidence of its own needs a vector.
        "SELECT ?1, c.rowid, c.text FROM claims c WHERE c.agent_id = ?3"
        " AND c.lifecycle IN ('active', 'superseded')"
        # A claim under a pending clear is neither read nor embedded.
        " AND NOT EXISTS (SELECT 1 FROM clear_jobs j WHERE j.agent_id = c.agent_id"
        "  AND j.phase <> 'done' AND c.rowid <= j.rowid_cutoff)"
        " AND NOT EXISTS (SELECT 1 FROM claim_sources s WHERE s.claim_rowid = c.rowid)"
        " AND NOT EXISTS (SELECT 1 FROM embeddings m"
        "  WHERE m.identity_key = ?4 AND m.target = ?1 AND m.target_rowid = c.rowid)"
        " UNION ALL"
        " SELECT ?2, e.rowid, NULL FROM events e"
        " WHERE e.agent_id = ?3 AND e.extracted = ?5 AND NOT EXISTS (SELECT 1"
        "  FROM embeddings m"
        "  WHERE m.identity_key = ?4 AND m.target = ?2 AND m.target_rowid = e.rowid)"
        " LIMIT ?6",
        (
            EmbedTarget.CLAIM.value,
            EmbedTarget.EVENT.value,
            agent_id,
            key,
            ExtractionState.EXTRACTED.value,
            limit,
        ),
    )
    return [
        (EmbedTarget(str(t)), int(r), None if x is None else str(x)) for t, r, x in rows
    ]


def count_missing(
    connection: apsw.Connection, agent_id: AgentId, identity: EmbeddingIdentity
) -> int:
    """How many extracted events of the agent have no vector of ``identity``."""
    row = connection.execute(
        "SELECT count(*) FROM events e WHERE e.agent_id = ? AND e.extracted = ?"
        " AND NOT EXISTS (SELECT 1 FROM embeddings m WHERE m.identity_key = ?"
        "  AND m.target = ? AND m.target_rowid = e.rowid)",
        (
            agent_id,
            ExtractionState.EXTRACTED.value,
            identity.key(),
            EmbedTarget.EVENT.value,
        ),
    ).fetchone()
    return 0 if row is None else int(row[0])


def embeddings_by_identity(
    connection: apsw.Connection,
) -> dict[str, list[dict[str, str | int]]]:
    """Per agent, how many vectors are stored of each embedding identity."""
    stored: dict[str, list[dict[str, str | int]]] = {}
    for agent_id, key, provider, model, dimension, metric, count in connection.execute(
        "SELECT m.agent_id, m.identity_key, v.provider, v.model, v.dimension, v.metric,"
        " count(*) FROM embeddings m JOIN vector_identity v USING (identity_key)"
        " GROUP BY m.agent_id, m.identity_key ORDER BY m.agent_id, m.identity_key"
    ):
        stored.setdefault(str(agent_id), []).append(
            {
                "identity_key": str(key),
                "provider": str(provider),
                "model": str(model),
                "dimension": int(dimension),
                "metric": str(metric),
                "count": int(count),
            }
        )
    return stored
