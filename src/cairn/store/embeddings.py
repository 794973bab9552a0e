"""Embedding blobs with their identity: the source the vector projection is rebuilt from."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    import apsw

    from cairn.domain.ids import AgentId
    from cairn.vectors.identity import EmbeddingIdentity

__all__ = [
    "count_embeddings",
    "count_missing",
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


# A claim under a pending clear gets no new vector (the clear's vector phase may be past it).
_NOT_CLEARED = {
    "claim": " AND NOT EXISTS (SELECT 1 FROM clear_jobs j WHERE j.agent_id = t.agent_id"
    " AND j.phase <> 'done' AND t.rowid <= j.rowid_cutoff)"
}


def store_embeddings(
    connection: apsw.Connection,
    agent_id: AgentId,
    identity: EmbeddingIdentity,
    rows: Sequence[tuple[str, int, bytes]],
) -> list[tuple[str, int]]:
    """Upsert ``(target, rowid, blob)`` rows whose target still exists (not forgotten,
    cleared or withdrawn meanwhile); return the ``(target, rowid)`` pairs stored, which are
    the only ones the in-memory projection may take."""
    ensure_identity(connection, identity)
    stored: list[tuple[str, int]] = []
    for target, rowid, blob in rows:
        table = "claims" if target == "claim" else "events"
        alive = connection.execute(
            f"SELECT 1 FROM {table} t WHERE t.rowid = ? AND t.agent_id = ?"  # noqa: S608 - fixed names
            + _NOT_CLEARED.get(target, ""),
            (rowid, agent_id),
        ).fetchone()
        if alive is None:
            continue
        connection.execute(
            "INSERT INTO embeddings (identity_key, target, target_rowid, agent_id, vector)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET vector = excluded.vector",
            (identity.key(), target, rowid, agent_id, blob),
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
) -> Iterator[tuple[str, int, bytes]]:
    for target, rowid, blob in connection.execute(
        "SELECT target, target_rowid, vector FROM embeddings"
        " WHERE agent_id = ? AND identity_key = ?",
        (agent_id, identity.key()),
    ):
        yield str(target), int(rowid), bytes(blob)


def missing_targets(
    connection: apsw.Connection,
    agent_id: AgentId,
    identity: EmbeddingIdentity,
    limit: int,
) -> list[tuple[str, int, str | None]]:
    """Extracted events (text ``None``: the caller builds it from the event) and active
    claims without evidence (with their text) that have no embedding of ``identity`` yet.

    Found at warm-up, so work lost in a crash between commit and embedding is redone.
    """
    key = identity.key()
    rows = connection.execute(
        # Claims are found through the vector of the evidence they cite (design/vectors.md);
        # only a claim without evidence of its own needs a vector.
        "SELECT 'claim', c.rowid, c.text FROM claims c WHERE c.agent_id = ?"
        " AND c.lifecycle = 'active'"
        # A claim under a pending clear is neither read nor embedded.
        " AND NOT EXISTS (SELECT 1 FROM clear_jobs j WHERE j.agent_id = c.agent_id"
        "  AND j.phase <> 'done' AND c.rowid <= j.rowid_cutoff)"
        " AND NOT EXISTS (SELECT 1 FROM claim_sources s WHERE s.claim_rowid = c.rowid)"
        " AND NOT EXISTS (SELECT 1 FROM embeddings m"
        "  WHERE m.identity_key = ? AND m.target = 'claim' AND m.target_rowid = c.rowid)"
        " UNION ALL"
        " SELECT 'event', e.rowid, NULL FROM events e"
        " WHERE e.agent_id = ? AND e.extracted = 1 AND NOT EXISTS (SELECT 1 FROM embeddings m"
        "  WHERE m.identity_key = ? AND m.target = 'event' AND m.target_rowid = e.rowid)"
        " LIMIT ?",
        (agent_id, key, agent_id, key, limit),
    )
    return [(str(t), int(r), None if x is None else str(x)) for t, r, x in rows]


def count_missing(
    connection: apsw.Connection, agent_id: AgentId, identity: EmbeddingIdentity
) -> int:
    """How many extracted events of the agent have no vector of ``identity``."""
    row = connection.execute(
        "SELECT count(*) FROM events e WHERE e.agent_id = ? AND e.extracted = 1"
        " AND NOT EXISTS (SELECT 1 FROM embeddings m WHERE m.identity_key = ?"
        "  AND m.target = 'event' AND m.target_rowid = e.rowid)",
        (agent_id, identity.key()),
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
