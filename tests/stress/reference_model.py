"""The plain reference model the stateful test checks cairn against.

It knows nothing of how cairn stores or ranks anything: only which marker words each agent
was told, which of them must be recallable now, which must never come back, and, for the
one attribute that changes (where the user lives), which value is current. Every fact
carries one unique marker word, so "is it recallable" is "does recall of the marker show
it" and "did it come back" is "does the marker appear anywhere".
"""

from __future__ import annotations

import datetime as dt
import enum
import re

import attrs

__all__ = [
    "MARKER_PATTERN",
    "AgentModel",
    "Fact",
    "FactKind",
    "Gone",
    "ReferenceModel",
    "marker_for",
    "markers_in",
]

# Latin markers: "Zx" and three consonant-vowel pairs, one word each. Chinese markers: two
# characters of a set no template uses, so a marker is never read out of neighbouring
# text, and each marker is one bigram of the index: two markers share no indexed term
# (with longer ones, "饕鑫鑫鑫" and "麤鑫鑫鑫" would both match a query for either, and
# which ranks first is a question of ranking, not of what is stored).
_CONSONANTS = "bcdfghjklmnpqrstvwz"
_VOWELS = "aeiou"
_HAN = "龘鱻麤驫靐齉爨饕餮貔貅魑魅魍魉麒麟鸾犇骉猋羴蟲淼焱垚鑫赑屃狴犴睚"
assert len(set(_HAN)) == 32
MARKER_PATTERN = re.compile(rf"\bzx(?:[{_CONSONANTS}][{_VOWELS}]){{3}}\b|[{_HAN}]{{2}}")


def marker_for(number: int, language: str) -> str:
    """The ``number``-th marker: distinct numbers give distinct markers (up to 95**3 Latin,
    32**2 Chinese ones)."""
    if language == "zh":
        return _HAN[number // 32 % 32] + _HAN[number % 32]
    letters = []
    for _ in range(3):
        number, consonant = divmod(number, len(_CONSONANTS))
        number, vowel = divmod(number, len(_VOWELS))
        letters.append(_CONSONANTS[consonant] + _VOWELS[vowel])
    return "Zx" + "".join(letters)


def markers_in(text: str) -> set[str]:
    """Every marker in ``text``, spelt as :func:`marker_for` spells it."""
    found = set()
    for match in MARKER_PATTERN.finditer(text.casefold()):
        word = match.group()
        found.add(word if word[0] in _HAN else word.capitalize())
    return found


class FactKind(enum.StrEnum):
    TURN = "turn"
    """A user turn stating a fact that never changes (one claim, one turn)."""
    RESIDENCE = "residence"
    """A user turn saying where the user lives: each one replaces the last."""
    REMEMBERED = "remembered"
    """A claim stored by ``remember`` (no turn behind it)."""


class Gone(enum.StrEnum):
    """Why a marker must never be recalled again."""

    FORGOTTEN_CLAIM = "forgotten_claim"
    """Its claim was forgotten: the source turn stays as the record, hidden."""
    FORGOTTEN_TURN = "forgotten_turn"
    REPLACED = "replaced"
    """Its turn was edited or deleted by the host: the old words are not recalled, the
    turn stays as the record."""
    CLEARED = "cleared"
    RETIRED = "retired"


@attrs.define
class Fact:
    marker: str
    agent_id: str
    generation: int
    kind: FactKind
    text: str
    event_id: str | None = None
    at: dt.datetime | None = None
    claim_id: str | None = None
    """Known once a remember returned it or a recall showed it."""
    by: str | None = None


@attrs.define
class AgentModel:
    """One agent's memory as a user sees it. ``generation`` counts retirements: a retired
    agent ID used again starts empty."""

    generation: int = 0
    live: dict[str, Fact] = attrs.Factory(dict)
    archived: set[str] = attrs.Factory(set)
    gone: dict[str, tuple[Fact, Gone]] = attrs.Factory(dict)
    """Markers of this generation that must never come back (replays pick from here)."""
    residences: list[str] = attrs.Factory(list)
    """Markers of the residence values in the order they were said."""
    used: bool = False

    def recallable(self) -> set[str]:
        """Markers recall of the marker must show: live, except an archived claim with
        no turn behind it (an archived claim's turn is still evidence)."""
        return {
            marker
            for marker, fact in self.live.items()
            if not (marker in self.archived and fact.kind is FactKind.REMEMBERED)
        }

    def current_residence(self) -> str | None:
        """The value that holds now: the last one said and not taken back (a forgotten
        value is as if never said, so the one before it holds again)."""
        live = [marker for marker in self.residences if marker in self.live]
        return live[-1] if live else None

    def past_residences(self) -> list[str]:
        live = [marker for marker in self.residences if marker in self.live]
        return live[:-1]


@attrs.define
class ReferenceModel:
    agents: dict[str, AgentModel]
    owner: dict[str, str] = attrs.Factory(dict)
    """Every marker ever handed out, and the agent it was told to."""
    never_again: set[str] = attrs.Factory(set)
    """Every marker forgotten, cleared or retired, over all generations."""
    records: dict[str, Gone] = attrs.Factory(dict)
    """Gone markers whose turn stays stored as the record (exported, never recalled): a
    forgotten claim's source (exported as ``hidden``), an edited or deleted message."""
    counter: int = 0

    @classmethod
    def for_agents(cls, agent_ids: list[str]) -> ReferenceModel:
        return cls({agent_id: AgentModel() for agent_id in agent_ids})

    def next_marker(self, agent_id: str, language: str) -> str:
        self.counter += 1
        marker = marker_for(self.counter, language)
        self.owner[marker] = agent_id
        return marker

    def add(self, fact: Fact) -> None:
        agent = self.agents[fact.agent_id]
        agent.used = True
        agent.live[fact.marker] = fact
        if fact.kind is FactKind.RESIDENCE:
            agent.residences.append(fact.marker)

    def restore(self, fact: Fact) -> None:
        """A user's re-add of a forgotten or cleared remembered claim."""
        agent = self.agents[fact.agent_id]
        del agent.gone[fact.marker]
        self.never_again.discard(fact.marker)
        agent.live[fact.marker] = fact

    def forget(self, marker: str, reason: Gone) -> None:
        agent = self.agents[self.owner[marker]]
        fact = agent.live.pop(marker)
        agent.archived.discard(marker)
        agent.gone[marker] = (fact, reason)
        self.never_again.add(marker)
        if reason is Gone.REPLACED or (
            reason is Gone.FORGOTTEN_CLAIM and fact.kind is not FactKind.REMEMBERED
        ):
            self.records[marker] = reason

    def clear(self, agent_id: str) -> None:
        agent = self.agents[agent_id]
        for marker in list(agent.live):
            self.forget(marker, Gone.CLEARED)
        # A clear takes the agent's turns too, records included.
        for marker in agent.gone:
            self.records.pop(marker, None)
        agent.residences.clear()

    def retire(self, agent_id: str) -> None:
        agent = self.agents[agent_id]
        for marker in list(agent.live):
            self.forget(marker, Gone.RETIRED)
        for marker in agent.gone:
            self.records.pop(marker, None)
        self.agents[agent_id] = AgentModel(generation=agent.generation + 1)

    def facts(self, kinds: set[FactKind] | None = None) -> list[Fact]:
        """Live facts of every agent (of ``kinds``), in a stable order."""
        return [
            fact
            for _, agent in sorted(self.agents.items())
            for _, fact in sorted(agent.live.items())
            if kinds is None or fact.kind in kinds
        ]

    def archived_facts(self) -> list[Fact]:
        return [
            agent.live[marker]
            for _, agent in sorted(self.agents.items())
            for marker in sorted(agent.archived)
        ]

    def gone_facts(self, kinds: set[FactKind], reasons: set[Gone]) -> list[Fact]:
        return [
            fact
            for _, agent in sorted(self.agents.items())
            for _, (fact, reason) in sorted(agent.gone.items())
            if fact.kind in kinds and reason in reasons
        ]
