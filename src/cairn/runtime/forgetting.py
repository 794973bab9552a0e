"""Trust and forgetting on a live runtime: directives, remember, forget, archive, retire.

Each operation is one write transaction through ``Database.write`` (the same serialised
writer connection the agent's coordinator uses); vector removal follows the commit. The
directive facade is the user's hand: ``create`` and ``approve`` are the only ways a
directive becomes active, and ``propose`` (for model suggestions) only ever makes drafts.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import apsw
import attrs
import numpy as np
import trio

from cairn.api.reports import ClearReport, KeptCounts
from cairn.clock import DomainClock
from cairn.domain.claim import ClaimDraft, ClaimKind, Origin
from cairn.domain.directive import Directive, DirectiveStatus
from cairn.domain.outcomes import (
    ForgetResult,
    LifecycleResult,
    RememberOutcome,
    RememberResult,
)
from cairn.domain.scope import Scope
from cairn.errors import (
    ClearPendingError,
    InvalidInputError,
    InvalidScopeError,
    RuntimeClosedError,
)
from cairn.retrieval.candidates import claim_key
from cairn.runtime.database import Database
from cairn.runtime.messages import EmbedJob
from cairn.runtime.supervisor import AgentSupervisor
from cairn.runtime.threads import run_in_thread
from cairn.store.clear_jobs import pending_clear_agents, start_clear
from cairn.store.directives import (
    create_directive,
    list_directives,
    set_directive_status,
    validate_directive,
)
from cairn.store.forget import forget_claim, remember_claim, set_archived

if TYPE_CHECKING:
    import datetime as dt

    from cairn.domain.ids import AgentId

__all__ = [
    "DirectiveBook",
    "archive",
    "forget",
    "remember",
    "resume_pending_clears",
    "retire",
]

MAX_REMEMBER_CHARS = 4_000


@attrs.define(eq=False)
class DirectiveBook:
    """``memory.directives``: the user's standing instructions for each agent."""

    # The runtime's lazy supervisor lookup (validates the agent ID, starts the agent).
    supervisor: Callable[[str], Awaitable[AgentSupervisor]]
    database: Database
    clock: DomainClock
    # The runtime's write admission (refused while drained, counted for the drain).
    admit_write: Callable[[], contextlib.AbstractContextManager[None]] = (
        contextlib.nullcontext
    )

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
        agent = (await self.supervisor(agent_id)).agent_id
        return await self.database.read(
            lambda reader: list_directives(reader.connection, agent, wanted)
        )

    async def _create(
        self, agent_id: str, text: str, kind: str, status: DirectiveStatus
    ) -> Directive:
        validate_directive(kind, text)
        with self.admit_write():
            agent = (await self.supervisor(agent_id)).agent_id
            now = self.clock.now()
            return await self.database.write(
                lambda connection: self._insert(
                    connection, agent, kind, text, status, now
                )
            )

    @staticmethod
    def _insert(
        connection: apsw.Connection,
        agent: AgentId,
        kind: str,
        text: str,
        status: DirectiveStatus,
        now: dt.datetime,
    ) -> Directive:
        directive_id = create_directive(
            connection, agent, kind, text, status.value, now
        )
        (created,) = [
            d
            for d in list_directives(connection, agent)
            if d.directive_id == directive_id
        ]
        return created

    async def _set(
        self, agent_id: str, directive_id: str, status: DirectiveStatus
    ) -> Directive:
        with self.admit_write():
            agent = (await self.supervisor(agent_id)).agent_id
            now = self.clock.now()
            return await self.database.write(
                lambda connection: set_directive_status(
                    connection, agent, directive_id, status, now
                )
            )


async def _write_claims(
    supervisor: AgentSupervisor, operation: Callable[[apsw.Connection], Any]
) -> Any:
    """Run a claim write; the clear-fence trigger's refusal becomes ClearPendingError."""
    try:
        return await supervisor.database.write(operation)
    except apsw.ConstraintError as error:
        if "clear job pending" in str(error):
            raise ClearPendingError(
                f"a clear job is pending for {supervisor.agent_id!r}"
            ) from None
        raise


async def _drop_vector(supervisor: AgentSupervisor, rowid: int) -> None:
    supervisor.slot.removed_claims.add(rowid)  # first: an embedding in flight checks it
    index = supervisor.slot.index
    if index is None:
        return
    keys = np.asarray([claim_key(rowid)], dtype=np.int64)
    await run_in_thread(lambda: index.remove(keys), limiter=supervisor.limiters.index)


async def forget(supervisor: AgentSupervisor, claim_id: str) -> ForgetResult:
    agent, clock = supervisor.agent_id, supervisor.clock
    result: ForgetResult = await _write_claims(
        supervisor,
        lambda connection: forget_claim(connection, agent, claim_id, clock.now()),
    )
    # After the durable delete: a crash in between leaves an orphan vector, which recall
    # never serves (re-validation) and warm-up drops.
    await _drop_vector(supervisor, result.rowid)
    return result


async def archive(
    supervisor: AgentSupervisor, claim_id: str, *, archived: bool
) -> LifecycleResult:
    agent, clock = supervisor.agent_id, supervisor.clock
    result: LifecycleResult = await _write_claims(
        supervisor,
        lambda connection: set_archived(
            connection, agent, claim_id, archived, clock.now()
        ),
    )
    return result


def _draft(
    text: str, kind: str, scope: Scope | None, by: str
) -> tuple[ClaimDraft, Origin]:
    if by not in {"user", "model"}:
        raise InvalidInputError("`by` is 'user' or 'model'")
    if not text.strip():
        raise InvalidInputError("nothing to remember: the text is blank")
    if len(text) > MAX_REMEMBER_CHARS:
        raise InvalidInputError(f"a claim is at most {MAX_REMEMBER_CHARS} characters")
    try:
        claim_kind = ClaimKind(kind)
    except ValueError:
        raise InvalidInputError(f"unknown claim kind {kind!r}") from None
    if scope is not None and not isinstance(scope, Scope):
        raise InvalidScopeError("scope must be a cairn Scope")
    origin = Origin.USER if by == "user" else Origin.MODEL
    draft = ClaimDraft(
        kind=claim_kind,
        text=" ".join(text.split()),
        spans=(),
        confidence=0.95 if origin is Origin.USER else 0.6,
        scope=scope or Scope.agent(),
    )
    return draft, origin


async def remember(
    supervisor: AgentSupervisor,
    text: str,
    *,
    kind: str = "fact",
    scope: Scope | None = None,
    by: str = "user",
) -> RememberResult:
    draft, origin = _draft(text, kind, scope, by)
    agent, clock = supervisor.agent_id, supervisor.clock
    result: RememberResult = await _write_claims(
        supervisor,
        lambda connection: remember_claim(
            connection, agent, draft, origin, clock.now()
        ),
    )
    if result.outcome is RememberOutcome.STORED and result.rowid is not None:
        supervisor.work.add(1)  # the embedding actor settles it
        try:
            await supervisor.embed_jobs_send.send(
                EmbedJob("claim", result.rowid, draft.text)
            )
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            # Not lost: the next warm-up embeds every claim without a vector.
            supervisor.work.done(1)
    return result


async def resume_pending_clears(
    database: Database,
    supervisor: Callable[[str], Awaitable[AgentSupervisor]],
    retired: Callable[[AgentSupervisor], Awaitable[None]],
) -> None:
    """Finish clear jobs a crash interrupted, one agent after another.

    Claims under a pending job are invisible from the start (the read fence does not wait
    for this); running the jobs in sequence keeps several interrupted namespaces from
    competing for the writer at once.
    """
    for agent in await database.read(
        lambda reader: pending_clear_agents(reader.connection)
    ):
        try:
            running = await supervisor(agent)
            await running.clearing.wait_finished()
        except RuntimeClosedError:
            return
        if running.clearing.retired is not None:
            await retired(running)
        else:
            # Turns that arrived while the job was pending were left unextracted.
            with contextlib.suppress(trio.WouldBlock):
                running.wake_send.send_nowait(None)


async def retire(supervisor: AgentSupervisor) -> dict[str, int]:
    """Fence the agent, run a retire job to its end; returns rows deleted per table.

    The job deletes the claims in bounded batches (crash-safe, like a clear), the vector
    files, then every other row of the namespace. The caller then cancels the agent's
    actors: nothing it owned may run on.
    """
    supervisor.accepting = False
    agent, clock = supervisor.agent_id, supervisor.clock
    job, epoch = await supervisor.database.write(
        lambda connection: start_clear(connection, agent, clock.now(), "retire")
    )
    supervisor.fence.advance(epoch, f"retire job {job.job_id}")
    with contextlib.suppress(trio.WouldBlock):
        supervisor.clear_wake_send.send_nowait(None)
    await supervisor.clearing.wait_finished()
    return dict(supervisor.clearing.retired or {})


async def clear_report(supervisor: AgentSupervisor, deleted: int) -> ClearReport:
    """What a clear removed and what it kept, in words a user interface can show as is."""
    agent = supervisor.agent_id

    def count(connection: apsw.Connection, table: str) -> int:
        row = connection.execute(
            f"SELECT count(*) FROM {table} WHERE agent_id = ?",  # noqa: S608 - fixed names
            (agent,),
        ).fetchone()
        return 0 if row is None else int(row[0])

    kept = await supervisor.database.read(
        lambda reader: {
            table: count(reader.connection, table)
            for table in ("events", "directives", "tombstones")
        }
    )
    return ClearReport(
        agent_id=agent,
        claims_deleted=deleted,
        removed=("claims", "claim vectors", "lineage", "dirty work"),
        kept=("evidence", "directives", "tombstones"),
        kept_counts=KeptCounts(**kept),
        summary=(
            f"memories cleared: {deleted} remembered claims deleted with their index"
            f" entries and vectors. Kept: {kept['events']} evidence turns/events,"
            f" {kept['directives']} directives, {kept['tombstones']} tombstones (hashes"
            " only, so cleared memories are not re-learned from the same source)."
        ),
    )
