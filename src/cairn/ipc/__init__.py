"""cairn over IPC: length-prefixed MessagePack frames on a pipe or a Unix socket.

The protocol is specified in design/ipc.md. This package holds the messages, the server
(``cairn serve``) and two clients with the embedded API's methods::

    async with cairn.ipc.open_unix_client("/run/cairn.sock") as memory:
        recall = await memory.recall("agent-1", "what does Ana like?")

    with cairn.ipc.BlockingClient.connect_unix("/run/cairn.sock") as memory:
        recall = memory.recall("agent-1", "what does Ana like?")
"""

from __future__ import annotations

from cairn.ipc import messages as messages
from cairn.ipc.blocking import BlockingClient as BlockingClient
from cairn.ipc.client import Client as Client
from cairn.ipc.client import open_client as open_client
from cairn.ipc.client import open_stdio_client as open_stdio_client
from cairn.ipc.client import open_unix_client as open_unix_client
from cairn.ipc.messages import PROTOCOL_VERSION as PROTOCOL_VERSION
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
