"""The blocking client, for plain Python programs (no event loop).

One request at a time per client, in the caller's thread: it sends a frame and reads until
its answer arrives. Not thread-safe; use one client per thread (the server handles many
connections). Same methods and errors as the trio client: it implements
:class:`cairn.BlockingMemoryApi`, each method one request built by cairn.ipc.requests.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from cairn.api.bounds import check_client_timeout_s
from cairn.errors import ConnectionLostError, ProtocolError
from cairn.ipc import requests
from cairn.ipc.codes import error_for
from cairn.ipc.framing import (
    CLIENT_MAX_FRAME_BYTES,
    FrameReader,
    decode_answer,
    encode_frame,
)
from cairn.ipc.messages import Error, Welcome
from cairn.ipc.spawn import serve_command

if TYPE_CHECKING:
    import datetime as dt
    import io
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from pathlib import Path
    from types import TracebackType

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

__all__ = ["BlockingClient", "BlockingDirectives"]

T = TypeVar("T")
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
        # Imported here, as in spawn_stdio: each way to connect loads only its own module,
        # which keeps importing the client light (tests/ipc/test_light_client.py).
        import socket  # noqa: PLC0415

        if timeout_s is not None:
            timeout_s = check_client_timeout_s("timeout_s", timeout_s)
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
        import subprocess  # noqa: PLC0415 - see connect_unix

        stop_timeout_s = check_client_timeout_s("stop_timeout_s", stop_timeout_s)
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
        self._write(encode_frame(requests.hello("cairn-python-blocking")))
        return requests.welcome(self._next_answer())

    def send(self, call: Call[Any, T]) -> T:
        """Send one request and read until its answer (raises the error it carries)."""
        request = call.numbered(next(self._ids))
        self._write(encode_frame(request))
        while True:
            answer = self._next_answer()
            if isinstance(answer, Error) and answer.id is None:
                raise error_for(answer.code, answer.message)
            if getattr(answer, "id", None) == request.id:
                return call.result(answer)
            # An answer to an earlier call that was interrupted: skip it.
            if not hasattr(answer, "id"):
                raise ProtocolError(f"unexpected {type(answer).__name__} frame")

    # -- the memory API (cairn.api.protocol.BlockingMemoryApi) -------------------------
    @property
    def directives(self) -> BlockingDirectives:
        """``create``/``propose``/``approve``/``revoke``/``list``, as ``Memory.directives``."""
        return BlockingDirectives(self)

    def ingest(self, agent_id: str, turns: Sequence[Turn]) -> IngestReport:
        return self.send(requests.ingest(agent_id, turns))

    def ingest_turn(self, agent_id: str, turn: Turn) -> IntakeResult:
        return self.send(requests.ingest_turn(agent_id, turn))

    def ingest_event(self, agent_id: str, event: Turn) -> IntakeResult:
        return self.send(requests.ingest_event(agent_id, event))

    def declare_session(
        self,
        agent_id: str,
        session_id: str,
        *,
        subagent: bool = False,
        forked_from: tuple[str, str] | None = None,
    ) -> None:
        self.send(
            requests.declare_session(
                agent_id, session_id, subagent=subagent, forked_from=forked_from
            )
        )

    def session_cursor(self, agent_id: str, session_id: str) -> str | None:
        return self.send(requests.session_cursor(agent_id, session_id))

    def replay_dead_letters(self, agent_id: str) -> int:
        return self.send(requests.replay_dead_letters(agent_id))

    def wait_idle(self, agent_id: str | None = None) -> None:
        self.send(requests.wait_idle(agent_id))

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
        query_vector: Iterable[float] | None = None,
        as_of: dt.datetime | None = None,
        turn_id: str | None = None,
        include_noise: bool = False,
        tags: Sequence[str] = (),
        kinds: Sequence[str] = (),
        since: dt.datetime | None = None,
        until: dt.datetime | None = None,
    ) -> Recall:
        return self.send(
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

    def fetch_recall(self, agent_id: str, request_id: str) -> Recall:
        return self.send(requests.fetch_recall(agent_id, request_id))

    def recalls(
        self, agent_id: str, *, session_id: str | None = None, limit: int = 50
    ) -> list[RecallRecord]:
        return self.send(requests.recalls(agent_id, session_id=session_id, limit=limit))

    def feedback(
        self,
        agent_id: str,
        request_id: str,
        *,
        used: Sequence[str] = (),
        wrong: Sequence[str] = (),
    ) -> FeedbackReport:
        return self.send(
            requests.feedback(agent_id, request_id, used=used, wrong=wrong)
        )

    def maintain(self, agent_id: str) -> MaintenanceReport:
        return self.send(requests.maintain(agent_id))

    def attention(
        self, agent_id: str, *, session_id: str | None = None, limit: int = 50
    ) -> list[AttentionItem]:
        return self.send(
            requests.attention(agent_id, session_id=session_id, limit=limit)
        )

    def consume_attention(self, agent_id: str, item_ids: Sequence[int]) -> int:
        return self.send(requests.consume_attention(agent_id, item_ids))

    def clear(self, agent_id: str) -> ClearReport:
        return self.send(requests.clear(agent_id))

    def wait_cleared(self, agent_id: str) -> None:
        self.send(requests.wait_cleared(agent_id))

    def remember(
        self,
        agent_id: str,
        text: str,
        *,
        by: str,
        kind: str = "fact",
        scope: Scope | None = None,
        metadata: Metadata | None = None,
    ) -> RememberResult:
        return self.send(
            requests.remember(
                agent_id, text, kind=kind, scope=scope, by=by, metadata=metadata
            )
        )

    def forget(self, agent_id: str, item_id: str) -> ForgetResult:
        return self.send(requests.forget(agent_id, item_id))

    def conflicts(
        self, agent_id: str, *, include_resolved: bool = False
    ) -> list[Conflict]:
        return self.send(
            requests.conflicts(agent_id, include_resolved=include_resolved)
        )

    def resolve_conflict(
        self, agent_id: str, conflict_id: str, *, keep: str
    ) -> Conflict:
        return self.send(requests.resolve_conflict(agent_id, conflict_id, keep=keep))

    def entities(
        self, agent_id: str, *, name: str | None = None, limit: int = 100
    ) -> list[Entity]:
        return self.send(requests.entities(agent_id, name=name, limit=limit))

    def evidence(self, agent_id: str, refs: Sequence[str]) -> list[EvidenceItem]:
        return self.send(requests.evidence(agent_id, refs))

    def memories(
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
        return self.send(
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

    def memory(self, agent_id: str, claim_id: str) -> MemoryDetail:
        return self.send(requests.memory(agent_id, claim_id))

    def edit(self, agent_id: str, claim_id: str, text: str) -> EditReport:
        return self.send(requests.edit(agent_id, claim_id, text))

    def archive(self, agent_id: str, claim_id: str) -> LifecycleResult:
        return self.send(requests.archive(agent_id, claim_id))

    def unarchive(self, agent_id: str, claim_id: str) -> LifecycleResult:
        return self.send(requests.unarchive(agent_id, claim_id))

    def retire(self, agent_id: str) -> RetireReport:
        return self.send(requests.retire(agent_id))

    def add_directive(
        self, agent_id: str, text: str, *, kind: str = "instruction"
    ) -> str:
        return self.send(requests.add_directive(agent_id, text, kind=kind))

    def reconfigure(self) -> ReconfigureReport:
        """Have the server re-read its provider configuration and switch live."""
        return self.send(requests.reconfigure())

    def status(self) -> StatusReport:
        return self.send(requests.status())

    def drain(self, timeout_s: float | None = None) -> DrainReport:
        """Ask the server to stop accepting writes and settle accepted work."""
        return self.send(requests.drain(timeout_s))

    def resume(self) -> None:
        self.send(requests.resume())

    def ping(self) -> None:
        """A round trip that touches nothing: is the server there and answering?"""
        self.send(requests.ping())


class BlockingDirectives:
    """``client.directives``: the user's standing instructions, over the connection."""

    def __init__(self, client: BlockingClient) -> None:
        self._client = client

    def create(
        self, agent_id: str, text: str, *, kind: str = "instruction"
    ) -> Directive:
        """Create an active directive. Call only on an explicit user action."""
        return self._client.send(requests.directives_create(agent_id, text, kind=kind))

    def propose(
        self, agent_id: str, text: str, *, kind: str = "instruction"
    ) -> Directive:
        """Record a suggested directive as a draft; it has no effect until approved."""
        return self._client.send(requests.directives_propose(agent_id, text, kind=kind))

    def approve(self, agent_id: str, directive_id: str) -> Directive:
        return self._client.send(requests.directives_approve(agent_id, directive_id))

    def revoke(self, agent_id: str, directive_id: str) -> Directive:
        return self._client.send(requests.directives_revoke(agent_id, directive_id))

    def list(self, agent_id: str, *, status: str | None = None) -> list[Directive]:
        """Directives of the agent, ``updated_at DESC, id ASC`` (optionally one status)."""
        return self._client.send(requests.directives_list(agent_id, status=status))
