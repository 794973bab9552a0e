"""Lexical candidate search over the FTS5 projections.

FTS5's cost grows with the number of rows a query matches (about 0.8 µs each, see
MEASUREMENTS.md), so a broad OR over common words is slow at 100k rows. Before querying we
look up each term's document frequency and keep the rarest terms within a posting budget:
common words carry little signal for bm25 anyway. Owner and scope are tokens inside the
MATCH expression, so isolation holds before LIMIT.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import apsw
import apsw.fts5
import attrs

from cairn.store.fts import owner_token, quote_term, scope_token

if TYPE_CHECKING:
    from collections.abc import Sequence

    from cairn.domain.scope import Scope

__all__ = ["LexicalHit", "LexicalSearcher"]

# Terms kept after pruning, and the most postings (documents) they may touch in total.
MAX_TERMS = 12
MAX_POSTINGS = 20_000


@attrs.frozen
class LexicalHit:
    rowid: int
    score: float


@attrs.define(eq=False)
class LexicalSearcher:
    """Per-connection helper (FTS5 table handles are tied to their connection)."""

    connection: apsw.Connection
    _tables: dict[str, apsw.fts5.Table] = attrs.field(factory=dict, init=False)

    def _table(self, name: str) -> apsw.fts5.Table:
        table = self._tables.get(name)
        if table is None:
            table = self._tables[name] = apsw.fts5.Table(self.connection, name)
        return table

    def _stems(self, table: str, terms: Sequence[str]) -> list[str]:
        fts_table = self._table(table)
        stems: dict[str, None] = {}
        for term in terms:
            for token in fts_table.tokenize(
                term.encode(), include_offsets=False, include_colocated=False
            ):
                stems.setdefault(str(token), None)
        return list(stems)

    def prune(self, table: str, terms: Sequence[str]) -> list[str]:
        """The rarest stems of ``terms`` within the posting budget (never empty if any match)."""
        stems = self._stems(table, terms)
        if not stems:
            return []
        placeholders = ",".join("?" * len(stems))
        frequencies = {
            str(term): int(doc)
            for term, doc in self.connection.execute(
                f"SELECT term, doc FROM {table}_vocab WHERE term IN ({placeholders})",  # noqa: S608 - table name is ours
                stems,
            )
        }
        present = sorted(
            (frequencies[stem], stem) for stem in stems if stem in frequencies
        )
        kept: list[str] = []
        budget = MAX_POSTINGS
        for frequency, stem in present[:MAX_TERMS]:
            if kept and frequency > budget:
                break
            kept.append(stem)
            budget -= frequency
        return kept

    def search_claims(
        self, agent_id: str, terms: Sequence[str], scopes: Sequence[Scope], limit: int
    ) -> list[LexicalHit]:
        stems = self.prune("claim_fts", terms)
        if not stems:
            return []
        scope_clause = " OR ".join(
            f"scope : {quote_term(scope_token(s.kind.value, s.key))}" for s in scopes
        )
        expression = (
            f"owner : {quote_term(owner_token(agent_id))} AND ({scope_clause})"
            f" AND body : ({' OR '.join(map(quote_term, stems))})"
        )
        return self._run("claim_fts", expression, limit)

    def search_events(
        self, agent_id: str, terms: Sequence[str], limit: int
    ) -> list[LexicalHit]:
        stems = self.prune("event_fts", terms)
        if not stems:
            return []
        expression = (
            f"owner : {quote_term(owner_token(agent_id))}"
            f" AND body : ({' OR '.join(map(quote_term, stems))})"
        )
        return self._run("event_fts", expression, limit)

    def _run(self, table: str, expression: str, limit: int) -> list[LexicalHit]:
        rows = self.connection.execute(
            f"SELECT rowid, rank FROM {table} WHERE {table} MATCH ?"  # noqa: S608 - table name is ours
            " ORDER BY rank LIMIT ?",
            (expression, limit),
        )
        return [LexicalHit(int(rowid), -float(rank)) for rowid, rank in rows]
