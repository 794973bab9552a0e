"""cairn over IPC: length-prefixed MessagePack frames on a pipe or a Unix socket.

The protocol is specified in design/ipc.md. This package holds the messages, the server
(``cairn serve``) and two clients with the embedded API's methods::

    async with cairn.ipc.open_unix_client("/run/cairn.sock") as memory:
        recall = await memory.recall("agent-1", "what does Ana like?")

    with cairn.ipc.BlockingClient.connect_unix("/run/cairn.sock") as memory:
        recall = memory.recall("agent-1", "what does Ana like?")

Importing this package loads the messages and the blocking client only: the trio client
(and trio) loads on first use of its names, the server's ``ServerLimits`` (and with it the
engine) on first use of that name (tests/ipc/test_light_client.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from cairn.ipc import messages as messages
from cairn.ipc.blocking import BlockingClient as BlockingClient
from cairn.ipc.messages import PROTOCOL_VERSION as PROTOCOL_VERSION

if TYPE_CHECKING:
    from cairn.ipc.client import Client as Client
    from cairn.ipc.client import open_client as open_client
    from cairn.ipc.client import open_stdio_client as open_stdio_client
    from cairn.ipc.client import open_unix_client as open_unix_client
    from cairn.ipc.server import ServerLimits as ServerLimits

__all__ = [
    "PROTOCOL_VERSION",
    "BlockingClient",
    "Client",
    "ServerLimits",
    "messages",
    "open_client",
    "open_stdio_client",
    "open_unix_client",
]

# Where each lazily loaded name is defined.
_DEFINED_IN = {
    "Client": "cairn.ipc.client",
    "open_client": "cairn.ipc.client",
    "open_stdio_client": "cairn.ipc.client",
    "open_unix_client": "cairn.ipc.client",
    "ServerLimits": "cairn.ipc.server",
}


# Hidden from mypy, which sees the lazy names through the TYPE_CHECKING imports above: a
# module-level __getattr__ would make it accept any misspelt attribute of the package.
if not TYPE_CHECKING:

    def __getattr__(name: str) -> object:
        module = _DEFINED_IN.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value  # later lookups skip this hook
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *_DEFINED_IN})
