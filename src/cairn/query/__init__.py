"""Query analysis: what a question asks, before candidates are gathered.

Offline, in the recall's reader thread: the names in the question (resolved against the
agent's entity aliases), time anchors ("last summer", "去年"), and the question's shape
(when, where, who, how many, why, list-all, yes/no, current state or history), from which
the route weights of the recall's candidate lists follow (:mod:`cairn.query.routes`).
"""
