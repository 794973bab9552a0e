"""The trio client: the embedded API's methods, over a connection to ``cairn serve``.

Many tasks may call one client at once; each request gets its own ID and the answers are
routed back by a single reader task, so a slow request never holds up a fast one. A call
that is cancelled forgets its ID (its answer is dropped on arrival); the server may still
have done the work, which is safe because every write is idempotent or reported by ID.
"""

from __future__ import annotations

import contextlib
import itertools
import subprocess
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import trio

from cairn.api.bounds import check_client_timeout_s
from cairn.errors import ConnectionLostError, IpcError, ProtocolError
from cairn.ipc import requests
from cairn.ipc.codes import error_for
from cairn.ipc.framing import (
    CLIENT_MAX_FRAME_BYTES,
    FrameReader,
    RejectedFrameError,
    decode_answer,
    encode_frame,
)
from cairn.ipc.messages import Error, Welcome
from cairn.ipc.spawn import serve_command

if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
    from pathlib import Path

    from cairn.api.reports import (
        AttentionItem,
        ClearReport,
        DrainReport,
        EditReport,
        Entity,
        EvidenceItem,
        FeedbackReport,
        IngestReport,
        MaintenanceReport,
        MemoryDetail,
        MemoryItem,
        RecallRecord,
        ReconfigureReport,
        RetireReport,
    )
    from cairn.api.status import StatusReport
    from cairn.domain.directive import Directive
    from cairn.domain.evidence import Turn
    from cairn.domain.metadata import Metadata
    from cairn.domain.outcomes import (
        Conflict,
        ForgetResult,
        IntakeResult,
        LifecycleResult,
        RememberResult,
    )
    from cairn.domain.scope import RecallContext, Scope
    from cairn.ipc.requests import Call
    from cairn.retrieval.types import Recall

__all__ = [
    "Client",
    "ClientDirectives",
    "open_client",
    "open_stdio_client",
    "open_unix_client",
]

T = TypeVar("T")
_RECEIVE_BYTES = 64 * 1024
SEND_TIMEOUT_S = 30.0


@attrs.define(eq=False)
class _AnswerSlot:
    """Where the reader task leaves one request's answer (or why none will come)."""

    _arrived: trio.Event = attrs.field(factory=trio.Event, init=False)
    _answer: object = attrs.field(default=None, init=False)
    _error: BaseException | None = attrs.field(default=None, init=False)

    def set(self, answer: object) -> None:
        self._answer = answer
        self._arrived.set()

    def fail(self, error: BaseException) -> None:
        self._error = error
        self._arrived.set()

    async def wait(self) -> object:
        await self._arrived.wait()
        if self._error is not None:
            raise self._error
        return self._answer


@attrs.define(eq=False)
class Client:
    """A connection to a cairn server. Build one with :func:`open_unix_client` or
    :func:`open_stdio_client`; it implements :class:`cairn.MemoryApi`, as
    :class:`cairn.Memory` does, each method one request built by cairn.ipc.requests."""

    stream: trio.abc.Stream
    welcome: Welcome
    _reader: FrameReader
    _pending: dict[int, _AnswerSlot] = attrs.field(factory=dict)
    _send_lock: trio.StrictFIFOLock = attrs.field(factory=trio.StrictFIFOLock)
    _ids: itertools.count[int] = attrs.field(factory=lambda: itertools.count(1))
    _lost: IpcError | None = None
    # The server answers `busy` past max_in_flight requests per connection; callers wait
    # here for a slot instead. A slot is freed when the server *answers*, not when a
    # caller gives up, so a cancelled call cannot make the next one busy.
    _slots: trio.Semaphore = attrs.field(init=False)
    _awaiting_answer: set[int] = attrs.field(factory=set)

    def __attrs_post_init__(self) -> None:
        self._slots = trio.Semaphore(max(1, self.welcome.max_in_flight))

    async def send(self, call: Call[Any, T]) -> T:
        """Send one request and wait for its answer (raises the error it carries)."""
        if self._lost is not None:
            await trio.lowlevel.checkpoint()
            raise self._lost
        request = call.numbered(next(self._ids))
        frame = encode_frame(request)
        await self._slots.acquire()
        reply = _AnswerSlot()
        self._pending[request.id] = reply
        sent = False
        try:
            async with self._send_lock:
                if self._lost is not None:
                    raise self._lost
                # From here the frame goes out whole (the write is shielded) or the
                # connection is lost; either way the slot is freed by the answer side.
                self._awaiting_answer.add(request.id)
                sent = True
                await self._send_whole(frame)
            answer = await reply.wait()
        finally:
            self._pending.pop(request.id, None)
            if not sent:
                self._slots.release()
        return call.result(answer)

    async def _send_whole(self, frame: bytes) -> None:
        """Write a frame whole, even if the caller is cancelled meanwhile.

        A frame cut in the middle would desynchronise the stream for every other caller,
        so the write is shielded; the server reads eagerly, so it is short. If it cannot
        finish in ``SEND_TIMEOUT_S`` the connection is given up.
        """
        with trio.CancelScope(
            shield=True, deadline=trio.current_time() + SEND_TIMEOUT_S
        ) as send_scope:
            try:
                await self.stream.send_all(frame)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self._lost = ConnectionLostError("the server closed the connection")
                raise self._lost from None
        if send_scope.cancelled_caught:
            self._lost = ConnectionLostError("the server stopped reading")
            await trio.aclose_forcefully(self.stream)
            raise self._lost

    async def read_answers(self) -> None:
        """Route every answer to its caller until the connection ends."""
        lost: IpcError = ConnectionLostError("the server closed the connection")
        try:
            while True:
                body = self._reader.next_frame()
                if body is None:
                    data = await self.stream.receive_some(_RECEIVE_BYTES)
                    if not data:
                        break
                    self._reader.feed(data)
                    continue
                answer = decode_answer(body)
                if isinstance(answer, Error) and answer.id is None:
                    lost = error_for(answer.code, answer.message)  # type: ignore[assignment]
                    continue
                if answer.id in self._awaiting_answer:
                    self._awaiting_answer.discard(answer.id)
                    self._slots.release()
                reply = self._pending.pop(answer.id, None)
                if reply is not None:
                    reply.set(answer)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        except (ProtocolError, RejectedFrameError) as error:
            lost = error
        finally:
            self._lost = lost
            for reply in self._pending.values():
                reply.fail(lost)
            for _ in self._awaiting_answer:
                self._slots.release()  # wake callers waiting for a slot: they see _lost
            self._awaiting_answer.clear()

    # -- the memory API (cairn.api.protocol.MemoryApi) ---------------------------------
    @property
    def directives(self) -> ClientDirectives:
        """``create``/``propose``/``approve``/``revoke``/``list``, as ``Memory.directives``."""
        return ClientDirectives(self)

    async def ingest(self, agent_id: str, turns: Sequence[Turn]) -> IngestReport:
        return await self.send(requests.ingest(agent_id, turns))

    async def ingest_turn(self, agent_id: str, turn: Turn) -> IntakeResult:
        return await self.send(requests.ingest_turn(agent_id, turn))

    async def ingest_event(self, agent_id: str, event: Turn) -> IntakeResult:
        return await self.send(requests.ingest_event(agent_id, event))

    async def declare_session(
        self,
        agent_id: str,
        session_id: str,
        *,
        subagent: bool = False,
        forked_from: tuple[str, str] | None = None,
    ) -> None:
        await self.send(
            requests.declare_session(
                agent_id, session_id, subagent=subagent, forked_from=forked_from
            )
        )

    async def session_cursor(self, agent_id: str, session_id: str) -> str | None:
        return await self.send(requests.session_cursor(agent_id, session_id))

    async def replay_dead_letters(self, agent_id: str) -> int:
        return await self.send(requests.replay_dead_letters(agent_id))

    async def wait_idle(self, agent_id: str | None = None) -> None:
        await self.send(requests.wait_idle(agent_id))

    async def recall(
        self,
        agent_id: str,
        query: str,
        *,
        context: RecallContext | None = None,
        session_id: str | None = None,
        k: int | None = None,
        budget_bytes: int | None = None,
        wait_s: float | None = None,
        query_vector: Iterable[float] | None = None,
        as_of: dt.datetime | None = None,
        turn_id: str | None = None,
        include_noise: bool = False,
        tags: Sequence[str] = (),
        kinds: Sequence[str] = (),
        since: dt.datetime | None = None,
        until: dt.datetime | None = None,
    ) -> Recall:
        return await self.send(
            requests.recall(
                agent_id,
                query,
                context=context,
                session_id=session_id,
                k=k,
                budget_bytes=budget_bytes,
                wait_s=wait_s,
                query_vector=query_vector,
                as_of=as_of,
                turn_id=turn_id,
                include_noise=include_noise,
                tags=tags,
                kinds=kinds,
                since=since,
                until=until,
            )
        )

    async def fetch_recall(self, agent_id: str, request_id: str) -> Recall:
        return await self.send(requests.fetch_recall(agent_id, request_id))

    async def recalls(
        self, agent_id: str, *, session_id: str | None = None, limit: int = 50
    ) -> list[RecallRecord]:
        return await self.send(
            requests.recalls(agent_id, session_id=session_id, limit=limit)
        )

    async def feedback(
        self,
        agent_id: str,
        request_id: str,
        *,
        used: Sequence[str] = (),
        wrong: Sequence[str] = (),
    ) -> FeedbackReport:
        return await self.send(
            requests.feedback(agent_id, request_id, used=used, wrong=wrong)
        )

    async def maintain(self, agent_id: str) -> MaintenanceReport:
        return await self.send(requests.maintain(agent_id))

    async def attention(
        self, agent_id: str, *, session_id: str | None = None, limit: int = 50
    ) -> list[AttentionItem]:
        return await self.send(
            requests.attention(agent_id, session_id=session_id, limit=limit)
        )

    async def consume_attention(self, agent_id: str, item_ids: Sequence[int]) -> int:
        return await self.send(requests.consume_attention(agent_id, item_ids))

    async def clear(self, agent_id: str) -> ClearReport:
        return await self.send(requests.clear(agent_id))

    async def wait_cleared(self, agent_id: str) -> None:
        await self.send(requests.wait_cleared(agent_id))

    async def remember(
        self,
        agent_id: str,
        text: str,
        *,
        by: str,
        kind: str = "fact",
        scope: Scope | None = None,
        metadata: Metadata | None = None,
    ) -> RememberResult:
        return await self.send(
            requests.remember(
                agent_id, text, kind=kind, scope=scope, by=by, metadata=metadata
            )
        )

    async def forget(self, agent_id: str, item_id: str) -> ForgetResult:
        return await self.send(requests.forget(agent_id, item_id))

    async def conflicts(
        self, agent_id: str, *, include_resolved: bool = False
    ) -> list[Conflict]:
        return await self.send(
            requests.conflicts(agent_id, include_resolved=include_resolved)
        )

    async def resolve_conflict(
        self, agent_id: str, conflict_id: str, *, keep: str
    ) -> Conflict:
        return await self.send(
            requests.resolve_conflict(agent_id, conflict_id, keep=keep)
        )

    async def entities(
        self, agent_id: str, *, name: str | None = None, limit: int = 100
    ) -> list[Entity]:
        return await self.send(requests.entities(agent_id, name=name, limit=limit))

    async def evidence(self, agent_id: str, refs: Sequence[str]) -> list[EvidenceItem]:
        return await self.send(requests.evidence(agent_id, refs))

    async def memories(
        self,
        agent_id: str,
        *,
        kind: str | None = None,
        scope: Scope | None = None,
        lifecycle: str | None = None,
        since: dt.datetime | None = None,
        until: dt.datetime | None = None,
        text: str | None = None,
        tags: Sequence[str] = (),
        limit: int = 50,
    ) -> list[MemoryItem]:
        return await self.send(
            requests.memories(
                agent_id,
                kind=kind,
                scope=scope,
                lifecycle=lifecycle,
                since=since,
                until=until,
                text=text,
                tags=tags,
                limit=limit,
            )
        )

    async def memory(self, agent_id: str, claim_id: str) -> MemoryDetail:
        return await self.send(requests.memory(agent_id, claim_id))

    async def edit(self, agent_id: str, claim_id: str, text: str) -> EditReport:
        return await self.send(requests.edit(agent_id, claim_id, text))

    async def archive(self, agent_id: str, claim_id: str) -> LifecycleResult:
        return await self.send(requests.archive(agent_id, claim_id))

    async def unarchive(self, agent_id: str, claim_id: str) -> LifecycleResult:
        return await self.send(requests.unarchive(agent_id, claim_id))

    async def retire(self, agent_id: str) -> RetireReport:
        return await self.send(requests.retire(agent_id))

    async def add_directive(
        self, agent_id: str, text: str, *, kind: str = "instruction"
    ) -> str:
        return await self.send(requests.add_directive(agent_id, text, kind=kind))

    async def reconfigure(self) -> ReconfigureReport:
        """Have the server re-read its provider configuration and switch live."""
        return await self.send(requests.reconfigure())

    async def status(self) -> StatusReport:
        return await self.send(requests.status())

    async def drain(self, timeout_s: float | None = None) -> DrainReport:
        """Ask the server to stop accepting writes and settle accepted work."""
        return await self.send(requests.drain(timeout_s))

    async def resume(self) -> None:
        await self.send(requests.resume())

    async def ping(self) -> None:
        """A round trip that touches nothing: is the server there and answering?"""
        await self.send(requests.ping())


@attrs.frozen
class ClientDirectives:
    """``client.directives``: the user's standing instructions, over the connection."""

    client: Client

    async def create(
        self, agent_id: str, text: str, *, kind: str = "instruction"
    ) -> Directive:
        """Create an active directive. Call only on an explicit user action."""
        return await self.client.send(
            requests.directives_create(agent_id, text, kind=kind)
        )

    async def propose(
        self, agent_id: str, text: str, *, kind: str = "instruction"
    ) -> Directive:
        """Record a suggested directive as a draft; it has no effect until approved."""
        return await self.client.send(
            requests.directives_propose(agent_id, text, kind=kind)
        )

    async def approve(self, agent_id: str, directive_id: str) -> Directive:
        return await self.client.send(
            requests.directives_approve(agent_id, directive_id)
        )

    async def revoke(self, agent_id: str, directive_id: str) -> Directive:
        return await self.client.send(
            requests.directives_revoke(agent_id, directive_id)
        )

    async def list(
        self, agent_id: str, *, status: str | None = None
    ) -> list[Directive]:
        """Directives of the agent, ``updated_at DESC, id ASC`` (optionally one status)."""
        return await self.client.send(requests.directives_list(agent_id, status=status))


async def _handshake(stream: trio.abc.Stream, reader: FrameReader) -> Welcome:
    try:
        await stream.send_all(encode_frame(requests.hello("cairn-python-trio")))
        while (body := reader.next_frame()) is None:
            data = await stream.receive_some(_RECEIVE_BYTES)
            if not data:
                raise ConnectionLostError("the server closed the connection")
            reader.feed(data)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        raise ConnectionLostError("the server closed the connection") from None
    return requests.welcome(decode_answer(body))


@contextlib.asynccontextmanager
async def open_client(stream: trio.abc.Stream) -> AsyncIterator[Client]:
    """Speak the protocol on ``stream`` (handshake first); closes the stream on exit."""
    async with stream:
        reader = FrameReader(CLIENT_MAX_FRAME_BYTES)
        client = Client(stream, await _handshake(stream, reader), reader)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.read_answers)
            try:
                yield client
            finally:
                nursery.cancel_scope.cancel(reason="client closed")


@contextlib.asynccontextmanager
async def open_unix_client(path: str | Path) -> AsyncIterator[Client]:
    """Connect to ``cairn serve --socket PATH``."""
    try:
        stream = await trio.open_unix_socket(str(path))
    except OSError as error:
        raise ConnectionLostError(f"cannot connect to {path}: {error}") from None
    async with open_client(stream) as client:
        yield client


@contextlib.asynccontextmanager
async def open_stdio_client(
    data_dir: str | Path,
    *,
    env: Mapping[str, str] | None = None,
    stop_timeout_s: float = 60.0,
    command: Sequence[str] | None = None,
) -> AsyncIterator[Client]:
    """Spawn ``cairn serve --stdio`` on ``data_dir`` and talk to it over its stdin/stdout.

    On exit the client closes the server's stdin; the server answers what is running,
    drains and exits (killed if it has not within ``stop_timeout_s``). Its log is on our
    stderr. ``command`` replaces the server's command line (default: ``serve_command``).
    """
    stop_timeout_s = check_client_timeout_s("stop_timeout_s", stop_timeout_s)
    process = await trio.lowlevel.open_process(
        serve_command(data_dir) if command is None else list(command),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=None if env is None else dict(env),
    )
    assert process.stdin is not None  # noqa: S101 - asked for above
    assert process.stdout is not None  # noqa: S101
    try:
        async with open_client(
            trio.StapledStream(process.stdin, process.stdout)
        ) as client:
            yield client
    finally:
        with trio.move_on_after(stop_timeout_s, shield=True) as stop_scope:
            await process.wait()
        if stop_scope.cancelled_caught:
            process.kill()
            with trio.CancelScope(shield=True):
                await process.wait()
