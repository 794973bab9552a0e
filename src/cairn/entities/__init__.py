"""Entities: the people, places, organisations, projects and artefacts memory speaks of.

An entity is known only through the turns that name it: every alias cites the turns it
was read from (``entity_mentions``), and an entity lives while one of its aliases does.
The offline rules (:mod:`cairn.entities.extract`) read speakers, names, nicknames, kinship
references ("my sister", "我妹妹") and explicit English/Chinese name pairs; the store
(:mod:`cairn.store.entities`) resolves each draft to an entity of the agent.
"""
