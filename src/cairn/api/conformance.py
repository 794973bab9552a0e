"""mypy's half of the parity check: every surface is assignable to its Protocol.

Nothing here runs (the whole body is under TYPE_CHECKING, and nothing imports this
module); mypy checks it with the rest of ``src/``, so a surface whose method drifts from
cairn.api.protocol fails type checking with the method named. tests/test_api_parity.py is
the runtime half (names, defaults and parameter kinds, which mypy's structural check
tolerates when they are compatible).

This is the one module of cairn.api that names the surfaces above it; the boundary test
allows it for that reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cairn.api.protocol import (
        BlockingDirectivesApi,
        BlockingMemoryApi,
        DirectivesApi,
        MemoryApi,
    )
    from cairn.hosts.asyncio_host import AsyncioDirectives, AsyncioMemory
    from cairn.ipc.blocking import BlockingClient, BlockingDirectives
    from cairn.ipc.client import Client, ClientDirectives
    from cairn.runtime.directives import DirectiveBook
    from cairn.runtime.memory import Memory

    def _embedded(memory: Memory) -> MemoryApi:
        return memory

    def _trio_client(client: Client) -> MemoryApi:
        return client

    def _asyncio_adapter(memory: AsyncioMemory) -> MemoryApi:
        return memory

    def _blocking_client(client: BlockingClient) -> BlockingMemoryApi:
        return client

    def _embedded_directives(book: DirectiveBook) -> DirectivesApi:
        return book

    def _trio_client_directives(directives: ClientDirectives) -> DirectivesApi:
        return directives

    def _asyncio_directives(directives: AsyncioDirectives) -> DirectivesApi:
        return directives

    def _blocking_directives(directives: BlockingDirectives) -> BlockingDirectivesApi:
        return directives
