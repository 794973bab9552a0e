"""Lexical candidate search over the FTS5 projections.

Tokens are namespaced per agent and scope (cairn.store.fts), so a query only ever touches
the caller's own doclists. FTS5's cost grows with the number of rows a query matches, so
before querying we look up each term's document frequency in the caller's namespaces and
keep the rarest terms within a posting budget: common words carry little bm25 signal
anyway. If even the rarest term is over budget, the query runs newest-first without
ranking the whole doclist, and the result says the candidate budget was exhausted.

An event's row has two columns, its own words and the turn it replies to; bm25 weighs the
second at ``CONTEXT_WEIGHT``, so the context still finds a reply whose own words miss the
question. A reply found through its context alone never ranks above the turn it answers:
bm25 normalises by the whole row's length, so a weight alone cannot promise that for a
short reply to a turn that followed a long one (design/recall.md).
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

import apsw
import apsw.fts5
import attrs

from cairn.store.fts import namespace, quote_term
from cairn.store.metadata import claim_probe, event_probe

if TYPE_CHECKING:
    from collections.abc import Sequence

    from cairn.domain.metadata import RecallFilter
    from cairn.domain.scope import Scope

__all__ = ["LexicalHit", "LexicalResult", "LexicalSearcher"]

# Terms kept after pruning, and the most postings (documents) they may touch together.
MAX_TERMS = 12
MAX_POSTINGS = 3_000
# fts5vocab counts documents by walking a term's doclist, which costs as much as searching
# it; pruning only needs an estimate, so counts are cached per connection for a while.
FREQUENCY_TTL_S = 30.0
FREQUENCY_CACHE_SIZE = 50_000
# bm25 weight of event_fts's context column (the body's is 1): measured on LoCoMo dev,
# design/recall.md "Evidence is indexed with its conversational context".
CONTEXT_WEIGHT = 0.5


@attrs.frozen
class LexicalHit:
    rowid: int
    score: float


@attrs.frozen
class LexicalResult:
    hits: list[LexicalHit]
    exhausted: bool = False


@attrs.define(eq=False)
class LexicalSearcher:
    """Per-connection helper (FTS5 table handles are tied to their connection)."""

    connection: apsw.Connection
    _tables: dict[str, apsw.fts5.Table] = attrs.field(factory=dict, init=False)
    _frequencies: dict[tuple[str, str], tuple[float, int]] = attrs.field(
        factory=dict, init=False
    )

    def _document_frequencies(self, table: str, stems: Sequence[str]) -> dict[str, int]:
        now = time.monotonic()
        known: dict[str, int] = {}
        missing: list[str] = []
        for stem in stems:
            cached = self._frequencies.get((table, stem))
            if cached is not None and now - cached[0] < FREQUENCY_TTL_S:
                known[stem] = cached[1]
            else:
                missing.append(stem)
        if missing:
            if len(self._frequencies) > FREQUENCY_CACHE_SIZE:
                self._frequencies.clear()
            found = dict.fromkeys(missing, 0)
            placeholders = ",".join("?" * len(missing))
            for term, doc in self.connection.execute(
                f"SELECT term, doc FROM {table}_vocab WHERE term IN ({placeholders})",  # noqa: S608 - table name is ours
                missing,
            ):
                found[str(term)] = int(doc)
            for stem, frequency in found.items():
                # Absent terms are not cached: a memory stored a moment after a query
                # that missed must be found by the next one (looking up an absent term
                # is a cheap probe; only walking a long doclist is worth caching).
                if frequency:
                    self._frequencies[table, stem] = (now, frequency)
            known.update(found)
        return known

    def _table(self, name: str) -> apsw.fts5.Table:
        table = self._tables.get(name)
        if table is None:
            table = self._tables[name] = apsw.fts5.Table(self.connection, name)
        return table

    def _stems(self, table: str, prefixes: Sequence[str], term: str) -> list[str]:
        """The indexed (namespaced, stemmed) forms of one query term."""
        fts_table = self._table(table)
        stems: dict[str, None] = {}
        for prefix in prefixes:
            for token in fts_table.tokenize(
                (prefix + term).encode(), include_offsets=False, include_colocated=False
            ):
                stems.setdefault(str(token), None)
        return list(stems)

    def prune(
        self, table: str, prefixes: Sequence[str], terms: Sequence[str]
    ) -> tuple[list[str], bool]:
        """Namespaced query terms of the rarest ``terms`` within the posting budget.

        Returns ``(terms, exhausted)``; ``exhausted`` means even the rarest term alone is
        over budget (it is returned, to be searched newest-first). Stems are only used to
        look up frequencies: MATCH tokenizes (and stems) its input itself.
        """
        groups = [self._stems(table, prefixes, term) for term in terms]
        namespaced = [[prefix + term for prefix in prefixes] for term in terms]
        every = [stem for group in groups for stem in group]
        if not every:
            return [], False
        frequencies = self._document_frequencies(table, every)
        sized = sorted(
            (sum(frequencies.get(stem, 0) for stem in group), index)
            for index, group in enumerate(groups)
        )
        present = [(size, index) for size, index in sized if size > 0][:MAX_TERMS]
        if not present:
            return [], False
        if present[0][0] > MAX_POSTINGS:
            return namespaced[present[0][1]], True
        kept: list[str] = []
        budget = MAX_POSTINGS
        for size, index in present:
            if size > budget:
                break
            kept.extend(namespaced[index])
            budget -= size
        return kept, False

    def search_claims(
        self,
        agent_id: str,
        terms: Sequence[str],
        scopes: Sequence[Scope],
        limit: int,
        *,
        recall_filter: RecallFilter | None = None,
    ) -> LexicalResult:
        """Ranked claim hits; with ``recall_filter``, only the claims it keeps, checked
        per hit before the LIMIT (cairn.store.metadata)."""
        prefixes = [
            namespace(agent_id, scope.kind.value, scope.key) for scope in scopes
        ]
        probe, parameters = claim_probe(recall_filter, "claim_fts.rowid")
        return self._search(
            "claim_fts", prefixes, terms, limit, "bm25()", probe, parameters
        )

    def search_events(
        self,
        agent_id: str,
        terms: Sequence[str],
        limit: int,
        *,
        noise: bool = False,
        recall_filter: RecallFilter | None = None,
    ) -> LexicalResult:
        """Ranked event hits; turns classified as noise only with ``noise``, and with
        ``recall_filter`` only the turns it keeps (both filtered in the query, before its
        LIMIT, so what is left out never crowds the rest out)."""
        kept, exhausted = self.prune("event_fts", [namespace(agent_id)], terms)
        if not kept:
            return LexicalResult([])
        probe, parameters = event_probe(recall_filter, "event_fts.rowid")
        # The third column is the score of the body alone: 0 when only the context matched.
        rows = self.connection.execute(
            "SELECT rowid, rank, bm25(event_fts, 1.0, 0.0) FROM event_fts"  # noqa: S608 - fixed clauses
            " WHERE event_fts MATCH ? AND rank MATCH ?"
            f"{'' if noise else _CONTENT.format(also='')}{probe}"
            f" ORDER BY {_order(exhausted=exhausted)} LIMIT ?",
            (_expression(kept), f"bm25(1.0, {CONTEXT_WEIGHT!r})", *parameters, limit),
        )
        hits: list[LexicalHit] = []
        context_only: set[int] = set()
        for rowid, rank, body_rank in rows:
            hits.append(LexicalHit(int(rowid), -float(rank)))
            if body_rank == 0:
                context_only.add(int(rowid))
        # A reply's turn is older (a smaller rowid) than the reply: only body hits ranked
        # below a context-only hit and older than one can be a turn it has to follow.
        first = next(
            (index for index, hit in enumerate(hits) if hit.rowid in context_only), None
        )
        if first is not None:
            newest = max(context_only)
            turns = [
                hit.rowid
                for hit in hits[first + 1 :]
                if hit.rowid not in context_only and hit.rowid < newest
            ]
            if turns:
                answered = self._answered_turns(turns)
                hits = _after_answered_turns(
                    hits, {r: t for r, t in answered.items() if r in context_only}
                )
        return LexicalResult(hits, exhausted)

    def search_events_within(
        self,
        agent_id: str,
        terms: Sequence[str],
        limit: int,
        condition: str,
        parameters: Sequence[object],
        *,
        body_only: bool = False,
        recall_filter: RecallFilter | None = None,
    ) -> LexicalResult:
        """Ranked event hits that also meet ``condition`` (an SQL predicate on
        ``event_fts.rowid``, its ``parameters`` bound after the query's own): the turns of
        one entity, of one time window. Checked per hit as FTS5 hands them back in rank
        order, until ``limit`` pass: the cost is in the hits read, never in how many
        turns the condition would select (a speaker's, every turn). Noise is left out;
        the context column ranks as above. With ``body_only`` a hit matched by its
        context alone counts only when that context asked a question: a speaker's "送什么
        礼物好？" is not about the computer the remark before it praised, while "Yes, every
        week!" after "Do you paint?" is about painting."""
        kept, exhausted = self.prune("event_fts", [namespace(agent_id)], terms)
        if not kept:
            return LexicalResult([])
        content = _CONTENT.format(also=_BODY_OR_ANSWER if body_only else "")
        probe, filter_parameters = event_probe(recall_filter, "event_fts.rowid")
        rows = self.connection.execute(
            "SELECT rowid, rank FROM event_fts"  # noqa: S608 - fixed clauses and ours
            f" WHERE event_fts MATCH ? AND rank MATCH ? AND {condition}{content}{probe}"
            f" ORDER BY {_order(exhausted=exhausted)} LIMIT ?",
            (
                _expression(kept),
                f"bm25(1.0, {CONTEXT_WEIGHT!r})",
                *parameters,
                *filter_parameters,
                limit,
            ),
        )
        return LexicalResult(
            [LexicalHit(int(rowid), -float(rank)) for rowid, rank in rows], exhausted
        )

    def _answered_turns(self, turns: Sequence[int]) -> dict[int, int]:
        """Replies to ``turns`` (events indexed with one of them as context): reply rowid
        to turn rowid. One seek each in the ``events_context`` index, never the table."""
        return {
            int(reply): int(turn)
            for turn, reply in self.connection.execute(
                "SELECT e.context_rowid, e.rowid FROM json_each(?) AS wanted"
                " CROSS JOIN events e ON e.context_rowid = wanted.value",
                (json.dumps(list(turns)),),
            )
        }

    def _search(
        self,
        table: str,
        prefixes: Sequence[str],
        terms: Sequence[str],
        limit: int,
        rank: str,
        condition: str = "",
        parameters: Sequence[object] = (),
    ) -> LexicalResult:
        kept, exhausted = self.prune(table, prefixes, terms)
        if not kept:
            return LexicalResult([])
        rows = self.connection.execute(
            f"SELECT rowid, rank FROM {table} WHERE {table} MATCH ?"  # noqa: S608 - names are ours
            f" AND rank MATCH ?{condition} ORDER BY {_order(exhausted=exhausted)} LIMIT ?",
            (_expression(kept), rank, *parameters, limit),
        )
        hits = [LexicalHit(int(rowid), -float(rank)) for rowid, rank in rows]
        return LexicalResult(hits, exhausted)


# One primary-key probe per hit FTS5 hands back in rank order, until LIMIT hits passed:
# the cost is in the hits read, not in the agent's turns. Said as a positive EXISTS,
# which SQLite runs as a semi-join probe, not as a correlated subquery set up per hit
# (3x faster at p95 on the 100k bench; a turn without its row is no hit either way).
_CONTENT = (
    " AND EXISTS (SELECT 1 FROM events e WHERE e.rowid = event_fts.rowid"
    " AND e.evidence_class = 'content'{also})"
)
# A hit whose body holds a term (bm25 of the body alone is negative then: FTS5 floors
# idf), or whose context is a question (the turn before it, which the context indexes).
_BODY_OR_ANSWER = (
    " AND (bm25(event_fts, 1.0, 0.0) < 0 OR EXISTS (SELECT 1 FROM events q"
    " WHERE q.rowid = e.context_rowid"
    " AND (instr(q.text, '?') > 0 OR instr(q.text, '？') > 0)))"
)


def _expression(kept: Sequence[str]) -> str:
    return " OR ".join(map(quote_term, kept))


def _order(*, exhausted: bool) -> str:
    # Newest-first needs no bm25 over the whole doclist: the bounded fallback.
    return "rowid DESC" if exhausted else "rank"


def _after_answered_turns(
    hits: list[LexicalHit], answered: dict[int, int]
) -> list[LexicalHit]:
    """``hits`` with every reply in ``answered`` moved just below the turn it answers, when
    that turn is a hit ranked lower; the moved reply takes that turn's score (a tie).

    One pass: a reply waits until its turn is placed. A turn is never a context-only reply
    itself (the words its reply matched are its own text), so no chain forms.
    """
    position = {hit.rowid: index for index, hit in enumerate(hits)}
    waiting: dict[int, list[LexicalHit]] = {}
    ordered: list[LexicalHit] = []
    for index, hit in enumerate(hits):
        turn = answered.get(hit.rowid)
        if turn is not None and position.get(turn, -1) > index:
            waiting.setdefault(turn, []).append(hit)
            continue
        ordered.append(hit)
        ordered.extend(
            LexicalHit(reply.rowid, hit.score) for reply in waiting.pop(hit.rowid, ())
        )
    return ordered
