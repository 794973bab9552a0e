"""Maintenance passes: the work that keeps an agent's memory clean as it grows.

Synchronous and trio-free, like cairn.store: a pass *plans* on a reader snapshot and
*applies* its plan inside one write transaction of the agent's write coordinator, which
checks the pass's fence first (cairn.runtime.actors.maintenance drives them, bounded and
cancellable between steps). The contract every pass follows is in
:mod:`cairn.maintenance.passes`; :mod:`cairn.maintenance.registry` lists the passes a
runtime runs, in order.
"""
