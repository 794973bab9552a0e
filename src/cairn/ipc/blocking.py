"""The blocking client, for plain Python programs (no event loop).

One request at a time per client, in the caller's thread: it sends a frame and reads until
its answer arrives. Not thread-safe; use one client per thread (the server handles many
connections). Same methods and errors as the trio client.
"""

from __future__ import annotations

import itertools
import socket
import subprocess
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from cairn.errors import ConnectionLostError, ProtocolError
from cairn.ipc.client import (
    CLIENT_MAX_FRAME_BYTES,
    hello_answer,
    recall_fields,
    retire_report,
    serve_command,
    unwrap,
)
from cairn.ipc.codes import error_for
from cairn.ipc.dispatch import scope_to_message, turn_to_message
from cairn.ipc.framing import FrameReader, decode_answer, encode_frame
from cairn.ipc.messages import (
    PROTOCOL_VERSION,
    AddDirectiveRequest,
    AddDirectiveResult,
    ArchiveRequest,
    ArchiveResult,
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
from cairn.runtime.memory import DrainReport, IngestReport

if TYPE_CHECKING:
    import io
    from collections.abc import Callable, Mapping, Sequence
    from pathlib import Path
    from types import TracebackType

    import numpy.typing as npt

    from cairn.domain.directive import Directive
    from cairn.domain.evidence import Turn
    from cairn.domain.scope import RecallContext, Scope
    from cairn.retrieval.types import Recall
    from cairn.store import forget as store
    from cairn.store.evidence import IntakeResult

__all__ = ["BlockingClient", "BlockingDirectives"]

A = TypeVar("A")
_RECEIVE_BYTES = 64 * 1024


class BlockingClient:
    """A blocking connection to a cairn server; build it with :meth:`connect_unix` or
    :meth:`spawn_stdio`. Use as a context manager, or call :meth:`close`."""

    def __init__(
        self,
        send: Callable[[bytes], None],
        receive: Callable[[], bytes],
        close: Callable[[], None],
    ) -> None:
        self._send = send
        self._receive = receive
        self._close = close
        self._reader = FrameReader(CLIENT_MAX_FRAME_BYTES)
        self._ids = itertools.count(1)
        self.welcome: Welcome = self._handshake()

    # -- construction ------------------------------------------------------------------
    @classmethod
    def connect_unix(
        cls, path: str | Path, *, timeout_s: float | None = None
    ) -> BlockingClient:
        """Connect to ``cairn serve --socket PATH``; ``timeout_s`` bounds each socket wait."""
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.settimeout(timeout_s)
        try:
            connection.connect(str(path))
        except OSError as error:
            connection.close()
            raise ConnectionLostError(f"cannot connect to {path}: {error}") from None
        return cls(
            connection.sendall,
            lambda: connection.recv(_RECEIVE_BYTES),
            connection.close,
        )

    @classmethod
    def spawn_stdio(
        cls,
        data_dir: str | Path,
        *,
        env: Mapping[str, str] | None = None,
        stop_timeout_s: float = 60.0,
        command: Sequence[str] | None = None,
    ) -> BlockingClient:
        """Start ``cairn serve --stdio`` on ``data_dir`` and talk over its stdin/stdout
        (``command`` replaces the server's command line, default ``serve_command``)."""
        process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            serve_command(data_dir) if command is None else list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=None if env is None else dict(env),
        )
        stdin, stdout = process.stdin, cast("io.BufferedReader", process.stdout)
        assert stdin is not None  # noqa: S101 - asked for above
        assert stdout is not None  # noqa: S101

        def send(frame: bytes) -> None:
            stdin.write(frame)
            stdin.flush()

        def close() -> None:
            stdin.close()  # end of input: the server drains and exits
            try:
                process.wait(stop_timeout_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            stdout.close()

        try:
            return cls(send, lambda: stdout.read1(_RECEIVE_BYTES), close)
        except BaseException:
            process.kill()
            process.wait()
            raise

    def close(self) -> None:
        self._close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # -- frames ------------------------------------------------------------------------
    def _write(self, frame: bytes) -> None:
        try:
            self._send(frame)
        except (BrokenPipeError, ConnectionResetError):
            raise ConnectionLostError("the server closed the connection") from None

    def _next_answer(self) -> Any:
        while (body := self._reader.next_frame()) is None:
            try:
                data = self._receive()
            except ConnectionResetError:
                data = b""
            if not data:
                raise ConnectionLostError("the server closed the connection")
            self._reader.feed(data)
        return decode_answer(body)

    def _handshake(self) -> Welcome:
        hello = Hello(versions=[PROTOCOL_VERSION], client="cairn-python-blocking")
        self._write(encode_frame(hello))
        return hello_answer(self._next_answer())

    def call(self, request: Request, expected: type[A]) -> A:
        """Send one request and read until its answer (raises the error it carries)."""
        self._write(encode_frame(request))
        while True:
            answer = self._next_answer()
            if isinstance(answer, Error) and answer.id is None:
                raise error_for(answer.code, answer.message)
            if getattr(answer, "id", None) == request.id:
                return unwrap(answer, expected)
            # An answer to an earlier call that was interrupted: skip it.
            if not hasattr(answer, "id"):
                raise ProtocolError(f"unexpected {type(answer).__name__} frame")

    # -- the embedded API --------------------------------------------------------------
    def ingest(self, agent_id: str, turns: Sequence[Turn]) -> IngestReport:
        request = IngestRequest(
            id=next(self._ids),
            agent_id=agent_id,
            turns=[turn_to_message(turn) for turn in turns],
        )
        return IngestReport(tuple(self.call(request, IngestResult).results))

    def ingest_turn(self, agent_id: str, turn: Turn) -> IntakeResult:
        request = IngestTurnRequest(
            id=next(self._ids), agent_id=agent_id, turn=turn_to_message(turn)
        )
        return self.call(request, IngestTurnResult).result

    def wait_idle(self, agent_id: str | None = None) -> None:
        self.call(
            WaitIdleRequest(id=next(self._ids), agent_id=agent_id), WaitIdleResult
        )

    def recall(
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
            id=next(self._ids),
            agent_id=agent_id,
            k=k,
            budget_bytes=budget_bytes,
            wait_s=wait_s,
            **recall_fields(query, context, session_id, query_vector),
        )
        return self.call(request, RecallResult).recall

    def fetch_recall(self, agent_id: str, request_id: str) -> Recall:
        request = FetchRecallRequest(
            id=next(self._ids), agent_id=agent_id, request_id=request_id
        )
        return self.call(request, FetchRecallResult).recall

    def clear(self, agent_id: str) -> dict[str, Any]:
        result = self.call(
            ClearRequest(id=next(self._ids), agent_id=agent_id), ClearResult
        )
        return {
            "claims_deleted": result.claims_deleted,
            "removed": result.removed,
            "kept": result.kept,
        }

    def add_directive(
        self, agent_id: str, text: str, *, kind: str = "instruction"
    ) -> str:
        request = AddDirectiveRequest(
            id=next(self._ids), agent_id=agent_id, text=text, kind=kind
        )
        return self.call(request, AddDirectiveResult).directive_id

    def ingest_event(self, agent_id: str, event: Turn) -> IntakeResult:
        """A runtime event, or an edit/retry/deletion of an earlier message."""
        request = IngestEventRequest(
            id=next(self._ids), agent_id=agent_id, event=turn_to_message(event)
        )
        return self.call(request, IngestEventResult).result

    def declare_session(
        self,
        agent_id: str,
        session_id: str,
        *,
        subagent: bool = False,
        forked_from: tuple[str, str] | None = None,
    ) -> None:
        request = DeclareSessionRequest(
            id=next(self._ids),
            agent_id=agent_id,
            session_id=session_id,
            subagent=subagent,
            forked_from=forked_from,
        )
        self.call(request, DeclareSessionResult)

    def session_cursor(self, agent_id: str, session_id: str) -> str | None:
        request = SessionCursorRequest(
            id=next(self._ids), agent_id=agent_id, session_id=session_id
        )
        return self.call(request, SessionCursorResult).event_id

    def replay_dead_letters(self, agent_id: str) -> int:
        request = ReplayDeadLettersRequest(id=next(self._ids), agent_id=agent_id)
        return self.call(request, ReplayDeadLettersResult).batches

    def remember(
        self,
        agent_id: str,
        text: str,
        *,
        kind: str = "fact",
        scope: Scope | None = None,
        by: str = "user",
    ) -> store.RememberResult:
        request = RememberRequest(
            id=next(self._ids),
            agent_id=agent_id,
            text=text,
            kind=kind,
            scope=scope_to_message(scope),
            by=by,
        )
        return self.call(request, RememberResult).result

    def forget(self, agent_id: str, claim_id: str) -> store.ForgetResult:
        request = ForgetRequest(
            id=next(self._ids), agent_id=agent_id, claim_id=claim_id
        )
        return self.call(request, ForgetResult).result

    def archive(self, agent_id: str, claim_id: str) -> store.LifecycleResult:
        request = ArchiveRequest(
            id=next(self._ids), agent_id=agent_id, claim_id=claim_id
        )
        return self.call(request, ArchiveResult).result

    def unarchive(self, agent_id: str, claim_id: str) -> store.LifecycleResult:
        request = UnarchiveRequest(
            id=next(self._ids), agent_id=agent_id, claim_id=claim_id
        )
        return self.call(request, UnarchiveResult).result

    def retire(self, agent_id: str) -> dict[str, Any]:
        request = RetireRequest(id=next(self._ids), agent_id=agent_id)
        return retire_report(self.call(request, RetireResult))

    @property
    def directives(self) -> BlockingDirectives:
        """``create``/``propose``/``approve``/``revoke``/``list``, as ``Memory.directives``."""
        return BlockingDirectives(self)

    def next_id(self) -> int:
        return next(self._ids)

    def status(self) -> dict[str, Any]:
        return self.call(StatusRequest(id=next(self._ids)), StatusResult).status

    def drain(self, timeout_s: float | None = None) -> DrainReport:
        result = self.call(
            DrainRequest(id=next(self._ids), timeout_s=timeout_s), DrainResult
        )
        return DrainReport(result.agents, result.elapsed_s)

    def reconfigure(self) -> tuple[bool, dict[str, Any]]:
        """Have the server re-read its provider configuration live: whether the embedding
        identity changed, and the embedder serving now."""
        result = self.call(ReconfigureRequest(id=next(self._ids)), ReconfigureResult)
        return result.changed, result.embedder

    def resume(self) -> None:
        self.call(ResumeRequest(id=next(self._ids)), ResumeResult)

    def ping(self) -> None:
        """A round trip that touches nothing: is the server there and answering?"""
        self.call(PingRequest(id=next(self._ids)), PingResult)


class BlockingDirectives:
    """``client.directives``: the user's standing instructions, over the connection."""

    def __init__(self, client: BlockingClient) -> None:
        self._client = client

    def create(
        self, agent_id: str, text: str, *, kind: str = "instruction"
    ) -> Directive:
        """Create an active directive. Call only on an explicit user action."""
        request = DirectivesCreateRequest(
            id=self._client.next_id(), agent_id=agent_id, text=text, kind=kind
        )
        return self._client.call(request, DirectivesCreateResult).directive

    def propose(
        self, agent_id: str, text: str, *, kind: str = "instruction"
    ) -> Directive:
        """Record a suggested directive as a draft; it has no effect until approved."""
        request = DirectivesProposeRequest(
            id=self._client.next_id(), agent_id=agent_id, text=text, kind=kind
        )
        return self._client.call(request, DirectivesProposeResult).directive

    def approve(self, agent_id: str, directive_id: str) -> Directive:
        request = DirectivesApproveRequest(
            id=self._client.next_id(), agent_id=agent_id, directive_id=directive_id
        )
        return self._client.call(request, DirectivesApproveResult).directive

    def revoke(self, agent_id: str, directive_id: str) -> Directive:
        request = DirectivesRevokeRequest(
            id=self._client.next_id(), agent_id=agent_id, directive_id=directive_id
        )
        return self._client.call(request, DirectivesRevokeResult).directive

    def list(self, agent_id: str, *, status: str | None = None) -> list[Directive]:
        """Directives of the agent, ``updated_at DESC, id ASC`` (optionally one status)."""
        request = DirectivesListRequest(
            id=self._client.next_id(), agent_id=agent_id, status=status
        )
        return self._client.call(request, DirectivesListResult).directives
