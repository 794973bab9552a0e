"""Where a command's work goes: to the server that holds the data directory, or to a
runtime of the command's own.

One process writes a data directory at a time (``ipc/directory.py``). A command that reads
or writes memory opens a :class:`Target` with :func:`open_target`:

- nobody holds the directory: the command takes its lock and opens the runtime itself for
  as long as it runs (a server started meanwhile is refused);
- a server holds it and listens on a socket (its ``server.json``): the command's calls go
  to that server over the socket, so the server's runtime stays the only writer;
- a server on stdio, a server starting or stopping, or another command holds it: the
  command is refused (DataDirectoryInUseError, exit 4) and nothing is done.

Commands that need the runtime itself (export, import, doctor, reindex) use
``CliContext.open``, which refuses whenever anyone holds the directory.
(tests/cli/test_beside_server.py.)
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import attrs
import trio

from cairn.api.protocol import MemoryApi
from cairn.domain.ids import validate_agent_id
from cairn.errors import InvalidInputError
from cairn.ipc.client import open_unix_client
from cairn.ipc.directory import Occupant, ServerRecord, claim_data_directory
from cairn.runtime.core import runtime_core
from cairn.runtime.memory import DATABASE_NAME, Memory
from cairn.runtime.threads import run_in_thread
from cairn.store.agents import list_agents
from cairn.store.connection import open_connection

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    import apsw

    from cairn.cli.app import CliContext

__all__ = ["Target", "open_target"]

T = TypeVar("T")


@attrs.frozen
class Target:
    """The memory a command works on, and where it lives.

    ``server`` is the serving process the calls go to, or None when this process runs
    the runtime itself (``memory``).
    """

    # The one declared API (cairn.api.protocol): embedded Memory or the IPC client.
    calls: MemoryApi
    data_dir: Path
    memory: Memory | None = None
    server: ServerRecord | None = None
    # The largest request the server accepts (its welcome); None when embedded.
    max_request_bytes: int | None = None

    async def read(self, function: Callable[[apsw.Connection], T]) -> T:
        """Run ``function`` on one read snapshot of the database.

        Beside a server this is a read-only SQLite connection of its own (WAL lets a
        reader in another process see committed data without blocking the writer); it
        never writes, so the server stays the only writer.
        """
        if self.memory is not None:
            result: T = await runtime_core(self.memory).database.read(
                lambda reader: function(reader.connection)
            )
            return result
        database = self.data_dir / DATABASE_NAME

        def snapshot() -> T:
            connection = open_connection(database, readonly=True)
            try:
                with connection:  # one transaction: one consistent snapshot
                    result = function(connection)
            finally:
                connection.close()
            return result

        return await run_in_thread(snapshot, limiter=trio.CapacityLimiter(1))

    async def known_agent(self, agent_id: str) -> str:
        """``agent_id`` if the directory stores it, else InvalidInputError (exit 2)."""
        try:
            agent = validate_agent_id(agent_id)
        except ValueError as error:
            raise InvalidInputError(str(error)) from None
        stored = await self.read(list_agents)
        if agent not in stored:
            raise InvalidInputError(f"no agent {agent_id!r} in {self.data_dir}")
        return agent


@contextlib.asynccontextmanager
async def open_target(cli: CliContext) -> AsyncIterator[Target]:
    """The memory of ``cli.data``: the server's if one serves it on a socket, else a
    runtime of this process under the directory's lock. Raises DataDirectoryInUseError
    (exit 4) when neither is possible."""
    data_dir = cli.data
    claimed = await run_in_thread(
        lambda: claim_data_directory(data_dir, role="command", command=cli.command),
        limiter=trio.CapacityLimiter(1),
    )
    if isinstance(claimed, Occupant):
        if claimed.server is None or claimed.socket is None:
            raise claimed.refusal(cli.command)
        async with open_unix_client(claimed.socket) as client:
            yield Target(
                client,
                data_dir,
                server=claimed.server,
                max_request_bytes=client.welcome.max_frame_bytes,
            )
        return
    with claimed:
        async with cli.open_runtime() as memory:
            yield Target(memory, data_dir, memory=memory)
