"""``cairn hook <host> <event>``: one host hook call, fail-open and inside its budget.

    cairn hook claude-code UserPromptSubmit   (payload on stdin)
    cairn hook codex Stop                     (payload on stdin)
    cairn hook codex notify '<json>'          (Codex's notify program: JSON argument)

Options (before or after the event): ``--data DIR`` (default ``$CAIRN_DATA``, else
``$XDG_DATA_HOME/cairn``, else ``~/.local/share/cairn``), ``--agent A`` (default
``$CAIRN_HOOK_AGENT``, else the host's own: ``claude-code`` or ``codex``), ``--budget S``
(seconds the whole call may take; default ``$CAIRN_HOOK_BUDGET_S``, else 4).

stdout carries only the host's expected JSON, or nothing; errors go to stderr as one
line and the exit code is always 0 (design/hooks.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from cairn.hooks import claude_code, codex
from cairn.hooks.envelope import HOSTS, HookError, PayloadError, TurnEnvelope, turns
from cairn.hooks.locate import await_server, live_socket, start_server
from cairn.hooks.spool import Spool, spool_of

if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import FrameType

    from cairn.ipc.blocking import BlockingClient

__all__ = ["main"]

DEFAULT_BUDGET_S = 4.0
# Left of the budget for closing, writing the spool and printing after the last wait.
_MARGIN_S = 0.5
# Left of the budget for the calls themselves once a started server is up.
_CALL_RESERVE_S = 0.5
# Spooled files one call ingests at most, so a long outage drains over a few calls.
_DRAIN_PER_CALL = 64


class _BudgetExceededError(HookError):
    pass


def _usage() -> str:
    return "usage: cairn hook claude-code|codex EVENT [--data DIR] [--agent A] [--budget S]"


def _default_data_dir() -> Path:
    # The same rule as cairn.cli.app.default_data_dir, which lives beside typer.
    if explicit := os.environ.get("CAIRN_DATA"):
        return Path(explicit)
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "cairn"


class _Call:
    """One hook invocation's parsed arguments and clock."""

    def __init__(self, argv: Sequence[str]) -> None:
        positional: list[str] = []
        options: dict[str, str] = {}
        items = list(argv)
        while items:
            item = items.pop(0)
            if item in {"--data", "--agent", "--budget"}:
                if not items:
                    raise HookError(f"{item} needs a value; {_usage()}")
                options[item] = items.pop(0)
            else:
                positional.append(item)
        if len(positional) < 2 or positional[0] not in HOSTS:
            raise HookError(_usage())
        self.host = positional[0]
        self.event = positional[1]
        self.arguments = positional[2:]
        self.data_dir = Path(options.get("--data") or _default_data_dir())
        self.agent = (
            options.get("--agent") or os.environ.get("CAIRN_HOOK_AGENT") or self.host
        )
        budget = options.get("--budget") or os.environ.get("CAIRN_HOOK_BUDGET_S")
        try:
            self.budget_s = DEFAULT_BUDGET_S if budget is None else float(budget)
        except ValueError:
            raise HookError(f"--budget must be seconds, not {budget!r}") from None
        self.started = time.monotonic()

    def remaining_s(self) -> float:
        return self.budget_s - (time.monotonic() - self.started) - _MARGIN_S

    @property
    def hooks_dir(self) -> Path:
        return self.data_dir / "hooks"


def _read_payload(call: _Call) -> dict[str, Any]:
    if call.host == "codex" and call.event == "notify":
        text = call.arguments[-1] if call.arguments else ""
    else:
        text = sys.stdin.read()
    try:
        payload = json.loads(text)
    except ValueError:
        raise PayloadError(f"the {call.host} payload is not JSON") from None
    if not isinstance(payload, dict):
        raise PayloadError(f"the {call.host} payload is not a JSON object")
    return payload


class _Cursor:
    """How far into a Claude Code transcript this session is captured (a byte offset),
    so a Stop sends only what is new; advanced only once the messages are ingested or
    spooled."""

    def __init__(self, call: _Call, session: str) -> None:
        self.path = call.hooks_dir / "cursors" / claude_code.cursor_key(session)

    def offset(self) -> int:
        try:
            return int(self.path.read_text(encoding="ascii"))
        except (OSError, ValueError):
            return 0

    def advance(self, offset: int) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(str(offset), encoding="ascii")
        temporary.replace(self.path)


def _envelope(
    call: _Call, payload: dict[str, Any]
) -> tuple[TurnEnvelope | None, _Cursor | None, int]:
    if call.host == "claude-code":
        session = payload.get("session_id")
        cursor = (
            _Cursor(call, session) if isinstance(session, str) and session else None
        )
        offset = 0 if cursor is None else cursor.offset()
        envelope, end = claude_code.envelope(
            payload, call.event, call.agent, offset=offset
        )
        return envelope, cursor, end
    if call.event == "notify":
        return codex.notify_envelope(payload, call.agent), None, 0
    return codex.envelope(payload, call.event, call.agent), None, 0


def _drain(client: BlockingClient, spool: Spool, call: _Call) -> int:
    """Ingest spooled envelopes oldest first, while the budget lasts; how many. A file
    the server refuses as bad input moves to ``rejected/`` (as the server's own drain
    does, cairn.hooks.replay), so it never fails every later call."""
    from cairn.errors import InvalidInputError  # noqa: PLC0415 - with the client

    drained = 0
    for path, envelope in spool.pending():
        if drained >= _DRAIN_PER_CALL or call.remaining_s() <= 0:
            break
        if envelope is None:
            continue
        try:
            if envelope.messages:
                client.ingest(envelope.actor, turns(envelope))
        except InvalidInputError:
            spool.reject(path)
            continue
        spool.remove(path)
        drained += 1
    return drained


def _context(recall: Any) -> str:
    blocks = [block for block in (recall.memory_block, recall.directive_block) if block]
    return "\n".join(blocks)


def _serve(client: BlockingClient, call: _Call, envelope: TurnEnvelope) -> str:
    """The host event's cairn calls; the context to inject ('' for none)."""
    context = ""
    if envelope.event == "SessionStart":
        client.declare_session(envelope.actor, envelope.session)
    if envelope.prompt is not None and envelope.prompt.strip():
        wait_s = max(0.0, min(call.remaining_s() - 0.25, 30.0))
        recall = client.recall(
            envelope.actor, envelope.prompt, session_id=envelope.session, wait_s=wait_s
        )
        context = _context(recall)
    if envelope.messages:
        client.ingest(envelope.actor, turns(envelope))
    return context


def _on_alarm(_signal: int, _frame: FrameType | None) -> None:
    raise _BudgetExceededError("the hook's budget ran out")


def _run(call: _Call) -> dict[str, Any] | None:
    from cairn.ipc.blocking import BlockingClient  # noqa: PLC0415 - after parsing

    payload = _read_payload(call)
    envelope, cursor, end = _envelope(call, payload)
    if envelope is None:
        return None
    spool = spool_of(call.data_dir)
    captured = False
    try:
        socket = live_socket(call.data_dir)
        if socket is None:
            started = start_server(call.data_dir)
            socket = await_server(
                call.data_dir, started, call.remaining_s() - _CALL_RESERVE_S
            )
            if socket is None:
                status = started.poll()
                if status is not None:
                    log = call.data_dir / "hooks" / "server.log"
                    raise HookError(
                        f"no cairn server held {call.data_dir}; the one started"
                        f" exited with status {status} (see {log})"
                    )
                raise HookError(
                    f"no cairn server held {call.data_dir}; started one, not up"
                    " within the budget"
                )
        timeout_s = max(call.remaining_s(), 0.05)
        with BlockingClient.connect_unix(socket, timeout_s=timeout_s) as client:
            _drain(client, spool, call)
            context = _serve(client, call, envelope)
            captured = True
    finally:
        if not captured and envelope.messages:
            spool.put(envelope)
            captured = True
        if captured and cursor is not None:
            cursor.advance(end)
    if call.host == "claude-code":
        return claude_code.output(envelope.event, context)
    return codex.output(envelope.event, context)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one hook call; always 0, output only the host's JSON (or nothing)."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    if arguments and arguments[0] == "hook":
        arguments = arguments[1:]
    try:
        call = _Call(arguments)
    except HookError as error:
        print(f"cairn hook: {error}", file=sys.stderr)  # noqa: T201 - the error line
        return 0
    # A hard stop inside the budget whatever blocks (a socket wait, a slow disk): the
    # host's timeout must never be the one that fires.
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, max(call.budget_s - 0.1, 0.1))
    result = None
    try:
        result = _run(call)
    except Exception as error:  # noqa: BLE001 - fail open: the host goes on, always
        print(f"cairn hook {call.host} {call.event}: {error}", file=sys.stderr)  # noqa: T201
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    if result is not None:
        with contextlib.suppress(OSError):
            sys.stdout.write(msgspec.json.encode(result).decode() + "\n")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
