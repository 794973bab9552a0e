"""Same-scope neighbours of dirty seeds: the claims a pass compares each seed with.

A seed's neighbours are active claims of the same agent, scope and scope key, found two
ways and bounded both ways: by vector similarity (the seed's own vector, or the vector of
the evidence it cites, since claims are found through their evidence: design/vectors.md)
and lexically (the seed's words in ``claim_fts``, whose tokens are namespaced per agent
and scope, so the search never leaves the seed's scope). Vector hits come first, then
lexical ones, each list best first, without repeats; a batch hands out at most
``NeighbourLimits.budget`` neighbours in all.

Three synchronous steps, so the caller can run each where it belongs: :func:`probe_seeds`
and :func:`resolve_neighbours` on a reader snapshot, :func:`search_probes` beside the
vector projection (any thread: searches are safe beside its one writer).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import attrs
import numpy as np
import numpy.typing as npt

from cairn.domain.scope import Scope, ScopeKind
from cairn.store.fts import query_terms
from cairn.vectors.codec import decode_vector
from cairn.vectors.keys import EmbedTarget, VectorKey

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    import apsw

    from cairn.domain.ids import AgentId
    from cairn.store.dirty import DirtySeed
    from cairn.store.search import LexicalSearcher

__all__ = [
    "NeighbourLimits",
    "SeedProbe",
    "probe_seeds",
    "resolve_neighbours",
    "search_probes",
]

# Vector hits asked for per neighbour wanted: hits outside the scope, of other
# lifecycles or of the seed's own evidence are dropped after the search.
OVERSAMPLE = 4
# Persona and working rows are rebuilt by their own projections, never compared.
_SKIPPED_KINDS = ("persona", "working")


@attrs.frozen
class NeighbourLimits:
    vector: int
    lexical: int
    budget: int
    """Neighbours handed out for a whole batch."""


@attrs.frozen(eq=False)
class SeedProbe:
    """What a seed is searched with: its scope, vector and lexical hits."""

    claim_rowid: int
    scope: str
    scope_key: str | None
    vector: npt.NDArray[np.float32] | None = None
    lexical: tuple[int, ...] = ()


def _seed_vector(
    connection: apsw.Connection, rowid: int, identity_key: str, dimension: int
) -> npt.NDArray[np.float32] | None:
    row = connection.execute(
        "SELECT vector FROM embeddings WHERE identity_key = ? AND target = 'claim'"
        " AND target_rowid = ?",
        (identity_key, rowid),
    ).fetchone()
    if row is None:
        row = connection.execute(
            "SELECT m.vector FROM claim_sources s JOIN embeddings m"
            " ON m.identity_key = ? AND m.target = 'event'"
            " AND m.target_rowid = s.event_rowid"
            " WHERE s.claim_rowid = ? ORDER BY s.event_rowid LIMIT 1",
            (identity_key, rowid),
        ).fetchone()
    if row is None:
        return None
    return decode_vector(bytes(row[0]), dimension).astype(np.float32)


def probe_seeds(
    connection: apsw.Connection,
    agent_id: AgentId,
    seeds: Sequence[DirtySeed],
    lexical: LexicalSearcher,
    *,
    lexical_limit: int,
    identity: tuple[str, int] | None,
) -> list[SeedProbe]:
    """A probe per seed still an active claim of the agent (others have no neighbours).

    ``identity`` is the serving embedding identity's key and dimension (``None``: no
    projection serves, so no vector probe).
    """
    probes: list[SeedProbe] = []
    for seed in seeds:
        row = connection.execute(
            "SELECT scope, scope_key, text, predicate FROM claims WHERE rowid = ?"
            " AND agent_id = ? AND lifecycle = 'active' AND kind NOT IN (?, ?)",
            (seed.claim_rowid, agent_id, *_SKIPPED_KINDS),
        ).fetchone()
        if row is None:
            continue
        scope, key = str(row[0]), None if row[1] is None else str(row[1])
        try:
            searched = Scope(ScopeKind(scope), key)
        except ValueError:
            continue  # a malformed row: the open-time repair's, not ours
        terms = query_terms(
            str(row[2]) if row[3] is None else f"{row[2]} {row[3]}".replace("_", " ")
        )
        hits = (
            lexical.search_claims(
                agent_id, terms, [searched], lexical_limit * OVERSAMPLE
            ).hits
            if terms
            else []
        )
        vector = (
            None
            if identity is None
            else _seed_vector(connection, seed.claim_rowid, *identity)
        )
        probes.append(
            SeedProbe(
                seed.claim_rowid,
                scope,
                key,
                vector,
                tuple(hit.rowid for hit in hits if hit.rowid != seed.claim_rowid),
            )
        )
    return probes


def search_probes(
    search: Callable[[npt.NDArray[np.float32], int], list[tuple[int, float]]],
    probes: Sequence[SeedProbe],
    vector_limit: int,
) -> dict[int, tuple[int, ...]]:
    """Seed rowid → vector keys most similar to its probe, best first."""
    return {
        probe.claim_rowid: tuple(
            key for key, _ in search(probe.vector, vector_limit * OVERSAMPLE)
        )
        for probe in probes
        if probe.vector is not None
    }


def _eligible(
    connection: apsw.Connection,
    agent_id: AgentId,
    probe: SeedProbe,
    rowids: Sequence[int],
) -> set[int]:
    if not rowids:
        return set()
    return {
        int(row[0])
        for row in connection.execute(
            "SELECT rowid FROM claims WHERE rowid IN (SELECT value FROM json_each(?))"
            " AND agent_id = ? AND scope = ? AND scope_key IS ?"
            " AND lifecycle = 'active' AND kind NOT IN (?, ?) AND rowid <> ?",
            (
                json.dumps(list(rowids)),
                agent_id,
                probe.scope,
                probe.scope_key,
                *_SKIPPED_KINDS,
                probe.claim_rowid,
            ),
        )
    }


def _claims_of_keys(connection: apsw.Connection, keys: Sequence[int]) -> list[int]:
    """Vector keys as claim rowids, in order: a turn's key stands for the claims citing
    it (lowest rowid first)."""
    found: list[int] = []
    for key in keys:
        decoded = VectorKey.decode(key)
        if decoded.target is EmbedTarget.CLAIM:
            found.append(decoded.rowid)
            continue
        found.extend(
            int(row[0])
            for row in connection.execute(
                "SELECT claim_rowid FROM claim_sources WHERE event_rowid = ?"
                " ORDER BY claim_rowid",
                (decoded.rowid,),
            )
        )
    return list(dict.fromkeys(found))


def resolve_neighbours(
    connection: apsw.Connection,
    agent_id: AgentId,
    probes: Sequence[SeedProbe],
    vector_keys: Mapping[int, Sequence[int]],
    limits: NeighbourLimits,
) -> dict[int, tuple[int, ...]]:
    """Seed rowid → its neighbours as they are in this snapshot, within the limits."""
    budget = limits.budget
    neighbours: dict[int, tuple[int, ...]] = {}
    for probe in probes:
        if budget <= 0:
            break
        by_vector = _claims_of_keys(connection, vector_keys.get(probe.claim_rowid, ()))
        eligible = _eligible(connection, agent_id, probe, [*by_vector, *probe.lexical])
        chosen = [rowid for rowid in by_vector if rowid in eligible][: limits.vector]
        chosen += [
            rowid
            for rowid in probe.lexical
            if rowid in eligible and rowid not in chosen
        ][: limits.lexical]
        chosen = chosen[:budget]
        budget -= len(chosen)
        if chosen:
            neighbours[probe.claim_rowid] = tuple(chosen)
    return neighbours
