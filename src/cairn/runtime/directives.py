"""``memory.directives``: the user's standing instructions for each agent.

The directive facade is the user's hand: ``create`` and ``approve`` are the only ways a
directive becomes active, and ``propose`` (for model suggestions) only ever makes drafts.
Every change is a typed write through the agent's coordinator, admitted like any other
write (refused while drained, waited for by a drain).
"""

from __future__ import annotations

import attrs

from cairn.domain.directive import Directive, DirectiveStatus
from cairn.errors import InvalidInputError
from cairn.ingestion.screen import redact_text
from cairn.runtime.admission import WriteAdmission
from cairn.runtime.database import Database
from cairn.runtime.registry import AgentRegistry
from cairn.runtime.writes import CreateDirective, SetDirectiveStatus
from cairn.store.directives import list_directives, validate_directive

__all__ = ["DirectiveBook"]


@attrs.define(eq=False)
class DirectiveBook:
    registry: AgentRegistry
    admission: WriteAdmission
    database: Database

    async def create(
        self, agent_id: str, text: str, *, kind: str = "instruction"
    ) -> Directive:
        """Create an active directive. Call only on an explicit user action."""
        return await self._create(agent_id, text, kind, DirectiveStatus.ACTIVE)

    async def propose(
        self, agent_id: str, text: str, *, kind: str = "instruction"
    ) -> Directive:
        """Record a suggested directive as a draft; it has no effect until approved."""
        return await self._create(agent_id, text, kind, DirectiveStatus.DRAFT)

    async def approve(self, agent_id: str, directive_id: str) -> Directive:
        """A user's approval of a draft: from now on it is active."""
        return await self._set(agent_id, directive_id, DirectiveStatus.ACTIVE)

    async def revoke(self, agent_id: str, directive_id: str) -> Directive:
        return await self._set(agent_id, directive_id, DirectiveStatus.REVOKED)

    async def list(
        self, agent_id: str, *, status: str | None = None
    ) -> list[Directive]:
        """Directives of the agent, ``updated_at DESC, id ASC`` (optionally one status)."""
        wanted = None
        if status is not None:
            try:
                wanted = DirectiveStatus(status)
            except ValueError:
                raise InvalidInputError(
                    f"unknown directive status {status!r}"
                ) from None
        agent = (await self.registry.get(agent_id)).agent_id
        return await self.database.read(
            lambda reader: list_directives(reader.connection, agent, wanted)
        )

    async def _create(
        self, agent_id: str, text: str, kind: str, status: DirectiveStatus
    ) -> Directive:
        # Directive text is rendered into every prompt: no secret lands there either.
        text = redact_text(text)
        validate_directive(kind, text)
        async with self.admission.write(agent_id) as supervisor:
            return await supervisor.commit(CreateDirective(kind, text, status))

    async def _set(
        self, agent_id: str, directive_id: str, status: DirectiveStatus
    ) -> Directive:
        async with self.admission.write(agent_id) as supervisor:
            return await supervisor.commit(SetDirectiveStatus(directive_id, status))
