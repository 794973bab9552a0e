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
import sys
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import numpy as np
import trio

from cairn.errors import (
    ConnectionLostError,
    IpcError,
    ProtocolError,
    ProtocolVersionError,
    ServerBusyError,
)
from cairn.ipc.codes import error_for
from cairn.ipc.dispatch import scope_to_message, turn_to_message
from cairn.ipc.framing import (
    DEFAULT_MAX_FRAME_BYTES,
    FrameReader,
    RejectedFrameError,
    decode_answer,
    encode_frame,
)
from cairn.ipc.messages import (
    PROTOCOL_VERSION,
    AddDirectiveRequest,
    AddDirectiveResult,
    ArchiveRequest,
    ArchiveResult,
    Busy,
    ClearRequest,
    ClearResult,
    DeclareSessionRequest,
    DeclareSessionResult,
    DirectivesApproveRequest,
    DirectivesApproveResult,
    DirectivesCreateRequest,
    DirectivesCreateResult,
    DirectivesListRequest,
    DirectivesListResult,
    DirectivesProposeRequest,
    DirectivesProposeResult,
    DirectivesRevokeRequest,
    DirectivesRevokeResult,
    DrainRequest,
    DrainResult,
    Error,
    FetchRecallRequest,
    FetchRecallResult,
    ForgetRequest,
    ForgetResult,
    Hello,
    IngestEventRequest,
    IngestEventResult,
    IngestRequest,
    IngestResult,
    IngestTurnRequest,
    IngestTurnResult,
    PingRequest,
    PingResult,
    RecallRequest,
    RecallResult,
    ReconfigureRequest,
    ReconfigureResult,
    RememberRequest,
    RememberResult,
    ReplayDeadLettersRequest,
    ReplayDeadLettersResult,
    Request,
    ResumeRequest,
    ResumeResult,
    RetireRequest,
    RetireResult,
    SessionCursorRequest,
    SessionCursorResult,
    StatusRequest,
    StatusResult,
    UnarchiveRequest,
    UnarchiveResult,
    WaitIdleRequest,
    WaitIdleResult,
    Welcome,
)
from cairn.runtime.mailbox import Reply
from cairn.runtime.memory import DrainReport, IngestReport

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping, Sequence
    from pathlib import Path

    import numpy.typing as npt

    from cairn.domain.directive import Directive
    from cairn.domain.evidence import Turn
    from cairn.domain.scope import RecallContext, Scope
    from cairn.retrieval.types import Recall
    from cairn.store import forget as store
    from cairn.store.evidence import IntakeResult

__all__ = [
    "Client",
    "ClientDirectives",
    "open_client",
    "open_stdio_client",
    "open_unix_client",
    "serve_command",
    "unwrap",
]

A = TypeVar("A")
_RECEIVE_BYTES = 64 * 1024
# The server's answers can be larger than what it accepts (a big status).
CLIENT_MAX_FRAME_BYTES = 4 * DEFAULT_MAX_FRAME_BYTES
SEND_TIMEOUT_S = 30.0


def unwrap(answer: object, expected: type[A]) -> A:
    """The expected result, or the error the answer stands for."""
    if isinstance(answer, expected):
        return answer
    if isinstance(answer, Busy):
        raise ServerBusyError(
            f"the server already runs {answer.max_in_flight} requests on this connection"
        )
    if isinstance(answer, Error):
        raise error_for(answer.code, answer.message)
    raise ProtocolError(f"expected {expected.__name__}, got {type(answer).__name__}")


def hello_answer(answer: object) -> Welcome:
    if isinstance(answer, Error) and answer.code == "version_mismatch":
        raise ProtocolVersionError(answer.message)
    return unwrap(answer, Welcome)


def retire_report(result: RetireResult) -> dict[str, Any]:
    """The retire answer as the embedded ``Memory.retire`` returns it."""
    return {
        "agent_id": result.agent_id,
        "rows_deleted": dict(result.rows_deleted),
        "kept": list(result.kept),
    }


def recall_fields(
    query: str,
    context: RecallContext | None,
    session_id: str | None,
    query_vector: npt.ArrayLike | None,
) -> dict[str, Any]:
    """The recall request's context fields, shared with the blocking client."""
    fields: dict[str, Any] = {"query": query, "session_id": session_id}
    if context is not None:
        fields.update(
            session_id=context.session_id or session_id,
            user_id=context.user_id,
            project_id=context.project_id,
        )
    if query_vector is not None:
        fields["query_vector"] = (
            np.asarray(query_vector, dtype=np.float32).reshape(-1).tolist()
        )
    return fields


@attrs.define(eq=False)
class Client:
    """A connection to a cairn server. Build one with :func:`open_unix_client` or
    :func:`open_stdio_client`; its methods match :class:`cairn.Memory`."""

    stream: trio.abc.Stream
    welcome: Welcome
    _reader: FrameReader
    _pending: dict[int, Reply[Any]] = attrs.field(factory=dict)
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

    def next_id(self) -> int:
        return next(self._ids)

    async def call(self, request: Request, expected: type[A]) -> A:
        """Send one request and wait for its answer (raises the error it carries)."""
        if self._lost is not None:
            await trio.lowlevel.checkpoint()
            raise self._lost
        frame = encode_frame(request)
        await self._slots.acquire()
        reply: Reply[Any] = Reply()
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
        return unwrap(answer, expected)

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

    # -- the embedded API --------------------------------------------------------------
    async def ingest(self, agent_id: str, turns: Sequence[Turn]) -> IngestReport:
        request = IngestRequest(
            id=self.next_id(),
            agent_id=agent_id,
            turns=[turn_to_message(turn) for turn in turns],
        )
        result = await self.call(request, IngestResult)
        return IngestReport(tuple(result.results))

    async def ingest_turn(self, agent_id: str, turn: Turn) -> IntakeResult:
        request = IngestTurnRequest(
            id=self.next_id(), agent_id=agent_id, turn=turn_to_message(turn)
        )
        return (await self.call(request, IngestTurnResult)).result

    async def wait_idle(self, agent_id: str | None = None) -> None:
        await self.call(
            WaitIdleRequest(id=self.next_id(), agent_id=agent_id), WaitIdleResult
        )

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
        query_vector: npt.ArrayLike | None = None,
    ) -> Recall:
        request = RecallRequest(
            id=self.next_id(),
            agent_id=agent_id,
            k=k,
            budget_bytes=budget_bytes,
            wait_s=wait_s,
            **recall_fields(query, context, session_id, query_vector),
        )
        return (await self.call(request, RecallResult)).recall

    async def fetch_recall(self, agent_id: str, request_id: str) -> Recall:
        request = FetchRecallRequest(
            id=self.next_id(), agent_id=agent_id, request_id=request_id
        )
        return (await self.call(request, FetchRecallResult)).recall

    async def clear(self, agent_id: str) -> dict[str, Any]:
        result = await self.call(
            ClearRequest(id=self.next_id(), agent_id=agent_id), ClearResult
        )
        return {
            "claims_deleted": result.claims_deleted,
            "removed": result.removed,
            "kept": result.kept,
        }

    async def add_directive(
        self, agent_id: str, text: str, *, kind: str = "instruction"
    ) -> str:
        request = AddDirectiveRequest(
            id=self.next_id(), agent_id=agent_id, text=text, kind=kind
        )
        return (await self.call(request, AddDirectiveResult)).directive_id

    async def ingest_event(self, agent_id: str, event: Turn) -> IntakeResult:
        """A runtime event, or an edit/retry/deletion of an earlier message."""
        request = IngestEventRequest(
            id=self.next_id(), agent_id=agent_id, event=turn_to_message(event)
        )
        return (await self.call(request, IngestEventResult)).result

    async def declare_session(
        self,
        agent_id: str,
        session_id: str,
        *,
        subagent: bool = False,
        forked_from: tuple[str, str] | None = None,
    ) -> None:
        request = DeclareSessionRequest(
            id=self.next_id(),
            agent_id=agent_id,
            session_id=session_id,
            subagent=subagent,
            forked_from=forked_from,
        )
        await self.call(request, DeclareSessionResult)

    async def session_cursor(self, agent_id: str, session_id: str) -> str | None:
        request = SessionCursorRequest(
            id=self.next_id(), agent_id=agent_id, session_id=session_id
        )
        return (await self.call(request, SessionCursorResult)).event_id

    async def replay_dead_letters(self, agent_id: str) -> int:
        request = ReplayDeadLettersRequest(id=self.next_id(), agent_id=agent_id)
        return (await self.call(request, ReplayDeadLettersResult)).batches

    async def remember(
        self,
        agent_id: str,
        text: str,
        *,
        kind: str = "fact",
        scope: Scope | None = None,
        by: str = "user",
    ) -> store.RememberResult:
        request = RememberRequest(
            id=self.next_id(),
            agent_id=agent_id,
            text=text,
            kind=kind,
            scope=scope_to_message(scope),
            by=by,
        )
        return (await self.call(request, RememberResult)).result

    async def forget(self, agent_id: str, claim_id: str) -> store.ForgetResult:
        request = ForgetRequest(id=self.next_id(), agent_id=agent_id, claim_id=claim_id)
        return (await self.call(request, ForgetResult)).result

    async def archive(self, agent_id: str, claim_id: str) -> store.LifecycleResult:
        request = ArchiveRequest(
            id=self.next_id(), agent_id=agent_id, claim_id=claim_id
        )
        return (await self.call(request, ArchiveResult)).result

    async def unarchive(self, agent_id: str, claim_id: str) -> store.LifecycleResult:
        request = UnarchiveRequest(
            id=self.next_id(), agent_id=agent_id, claim_id=claim_id
        )
        return (await self.call(request, UnarchiveResult)).result

    async def retire(self, agent_id: str) -> dict[str, Any]:
        request = RetireRequest(id=self.next_id(), agent_id=agent_id)
        return retire_report(await self.call(request, RetireResult))

    @property
    def directives(self) -> ClientDirectives:
        """``create``/``propose``/``approve``/``revoke``/``list``, as ``Memory.directives``."""
        return ClientDirectives(self)

    async def status(self) -> dict[str, Any]:
        return (await self.call(StatusRequest(id=self.next_id()), StatusResult)).status

    async def drain(self, timeout_s: float | None = None) -> DrainReport:
        """Ask the server to stop accepting writes and settle accepted work."""
        request = DrainRequest(id=self.next_id(), timeout_s=timeout_s)
        result = await self.call(request, DrainResult)
        return DrainReport(result.agents, result.elapsed_s)

    async def reconfigure(self) -> tuple[bool, dict[str, Any]]:
        """Have the server re-read its provider configuration live: whether the embedding
        identity changed, and the embedder serving now."""
        result = await self.call(
            ReconfigureRequest(id=self.next_id()), ReconfigureResult
        )
        return result.changed, result.embedder

    async def resume(self) -> None:
        await self.call(ResumeRequest(id=self.next_id()), ResumeResult)

    async def ping(self) -> None:
        """A round trip that touches nothing: is the server there and answering?"""
        await self.call(PingRequest(id=self.next_id()), PingResult)


@attrs.frozen
class ClientDirectives:
    """``client.directives``: the user's standing instructions, over the connection."""

    client: Client

    async def create(
        self, agent_id: str, text: str, *, kind: str = "instruction"
    ) -> Directive:
        """Create an active directive. Call only on an explicit user action."""
        request = DirectivesCreateRequest(
            id=self.client.next_id(), agent_id=agent_id, text=text, kind=kind
        )
        return (await self.client.call(request, DirectivesCreateResult)).directive

    async def propose(
        self, agent_id: str, text: str, *, kind: str = "instruction"
    ) -> Directive:
        """Record a suggested directive as a draft; it has no effect until approved."""
        request = DirectivesProposeRequest(
            id=self.client.next_id(), agent_id=agent_id, text=text, kind=kind
        )
        return (await self.client.call(request, DirectivesProposeResult)).directive

    async def approve(self, agent_id: str, directive_id: str) -> Directive:
        request = DirectivesApproveRequest(
            id=self.client.next_id(), agent_id=agent_id, directive_id=directive_id
        )
        return (await self.client.call(request, DirectivesApproveResult)).directive

    async def revoke(self, agent_id: str, directive_id: str) -> Directive:
        request = DirectivesRevokeRequest(
            id=self.client.next_id(), agent_id=agent_id, directive_id=directive_id
        )
        return (await self.client.call(request, DirectivesRevokeResult)).directive

    async def list(
        self, agent_id: str, *, status: str | None = None
    ) -> list[Directive]:
        """Directives of the agent, ``updated_at DESC, id ASC`` (optionally one status)."""
        request = DirectivesListRequest(
            id=self.client.next_id(), agent_id=agent_id, status=status
        )
        return (await self.client.call(request, DirectivesListResult)).directives


async def _handshake(stream: trio.abc.Stream, reader: FrameReader) -> Welcome:
    hello = Hello(versions=[PROTOCOL_VERSION], client="cairn-python-trio")
    try:
        await stream.send_all(encode_frame(hello))
        while (body := reader.next_frame()) is None:
            data = await stream.receive_some(_RECEIVE_BYTES)
            if not data:
                raise ConnectionLostError("the server closed the connection")
            reader.feed(data)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        raise ConnectionLostError("the server closed the connection") from None
    return hello_answer(decode_answer(body))


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


def serve_command(data_dir: str | Path) -> list[str]:
    """The command that serves ``data_dir`` on stdio with this Python."""
    return [sys.executable, "-m", "cairn", "--data", str(data_dir), "serve", "--stdio"]


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
