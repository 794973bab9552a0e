"""Directive suppression: active ``suppress_topic`` directives remove recall candidates.

Runs on validated candidates, before ranking, rendering and the audit row, so a suppressed
memory is never counted as accessed. Claims and evidence are both filtered: a claim's own
turn must not bring the topic back. The source turns of forgotten claims are marked hidden:
ranking never shows them, but the other claims of the same turn still rank through them.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import attrs

from cairn.domain.directive import DirectiveKind, TopicMatcher
from cairn.retrieval.keys import CandidateKey

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Sequence

    import apsw

    from cairn.domain.directive import ActiveDirective
    from cairn.retrieval.candidates import Candidates

__all__ = ["hidden_events", "suppress_candidates", "topic_matcher"]


def topic_matcher(directives: Sequence[ActiveDirective]) -> TopicMatcher:
    """A matcher for the ``suppress_topic`` directives among ``directives``."""
    return TopicMatcher.build(
        [d.text for d in directives if d.kind is DirectiveKind.SUPPRESS_TOPIC]
    )


def hidden_events(
    connection: apsw.Connection, agent_id: str, event_rowids: Iterable[int]
) -> set[int]:
    """Which of ``event_rowids`` are sources of forgotten claims (never recalled)."""
    return {
        int(row[0])
        for row in connection.execute(
            "SELECT h.event_rowid FROM json_each(?) AS wanted CROSS JOIN hidden_evidence h"
            " ON h.agent_id = ? AND h.event_rowid = wanted.value",
            (json.dumps(sorted(event_rowids)), agent_id),
        )
    }


def suppress_candidates(
    candidates: Candidates,
    matcher: TopicMatcher,
    hidden: Collection[int] = (),
) -> tuple[Candidates, int]:
    """Candidates without those mentioning a suppressed topic, with ``hidden`` events
    marked (not shown; their other claims still rank through them), and how many were
    removed."""
    if not matcher and not hidden:
        return candidates, 0
    claims = {
        rowid: claim
        for rowid, claim in candidates.claims.items()
        if not (matcher and matcher.matches(claim.text))
    }
    events = {
        rowid: event
        for rowid, event in candidates.events.items()
        if not (matcher and matcher.matches(event.text))
    }
    shown_hidden = frozenset(rowid for rowid in hidden if rowid in events)
    removed = (
        len(candidates.claims) - len(claims) + len(candidates.events) - len(events)
    )
    if not removed:
        return attrs.evolve(candidates, hidden_events=shown_hidden), 0
    valid = {CandidateKey.claim(rowid) for rowid in claims} | {
        CandidateKey.event(rowid) for rowid in events
    }
    lists = {
        name: [key for key in keys if key in valid]
        for name, keys in candidates.lists.items()
    }
    by_event = {
        event: [rowid for rowid in rowids if rowid in claims]
        for event, rowids in candidates.claims_by_event.items()
        if event in events
    }
    return (
        attrs.evolve(
            candidates,
            claims=claims,
            events=events,
            lists=lists,
            claims_by_event=by_event,
            hidden_events=shown_hidden,
            successors={
                old: new
                for old, new in candidates.successors.items()
                if old in claims and new in claims
            },
            anchors={
                claim: event
                for claim, event in candidates.anchors.items()
                if claim in claims and event in events
            },
        ),
        removed,
    )
