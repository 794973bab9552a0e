"""The public memory API, declared once: its Protocols and the reports it returns.

Every surface (the embedded :class:`cairn.Memory`, the IPC clients, the asyncio adapter)
implements the Protocols in :mod:`cairn.api.protocol` and returns the frozen records of
:mod:`cairn.api.reports` and :mod:`cairn.api.status`. Like :mod:`cairn.domain`, this
package holds types only: it imports nothing heavier than attrs, so a client can use it
without loading the engine.
"""
