"""Operator commands for trust and forgetting: clear, retire, forget, archive, remember,
directives. Every command says exactly what it changed; ``--json`` gives the same as a
machine-readable object."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import attrs

from cairn.errors import InvalidInputError

if TYPE_CHECKING:
    import argparse

    from cairn.runtime.memory import Memory

__all__ = ["COMMANDS", "add_parsers", "run"]

COMMANDS = frozenset(
    {"clear", "retire", "forget", "archive", "unarchive", "remember", "directives"}
)


def add_parsers(sub: Any) -> None:
    clear = sub.add_parser(
        "clear",
        help="delete an agent's memories (claims); evidence and directives stay",
    )
    clear.add_argument("--agent", required=True)
    clear.add_argument("--json", action="store_true")

    retire = sub.add_parser(
        "retire", help="delete EVERYTHING of an agent (memories, evidence, directives)"
    )
    retire.add_argument("--agent", required=True)
    retire.add_argument("--yes", action="store_true", help="confirm the deletion")
    retire.add_argument("--json", action="store_true")

    for name, text in (
        ("forget", "delete one claim; its exact replay stays suppressed"),
        ("archive", "take one claim out of recall, keeping it locally"),
        ("unarchive", "bring an archived claim back into recall"),
    ):
        command = sub.add_parser(name, help=text)
        command.add_argument("--agent", required=True)
        command.add_argument("claim_id")
        command.add_argument("--json", action="store_true")

    remember = sub.add_parser("remember", help="store one claim as the user's own")
    remember.add_argument("--agent", required=True)
    remember.add_argument("--kind", default="fact")
    remember.add_argument("text")
    remember.add_argument("--json", action="store_true")

    directives = sub.add_parser("directives", help="the user's standing directives")
    actions = directives.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="directives, newest first")
    listing.add_argument(
        "--status", default=None, choices=["draft", "active", "revoked"]
    )
    for name, text in (
        ("add", "create an active directive (the user's own instruction)"),
        ("propose", "record a suggested directive as a draft"),
    ):
        action = actions.add_parser(name, help=text)
        action.add_argument("text")
        action.add_argument(
            "--kind", default="instruction", choices=["instruction", "suppress_topic"]
        )
    for name in ("approve", "revoke"):
        actions.add_parser(name, help=f"{name} a directive").add_argument(
            "directive_id"
        )
    for action in actions.choices.values():
        action.add_argument("--agent", required=True)
        action.add_argument("--json", action="store_true")


def _plain(value: Any) -> Any:
    if attrs.has(type(value)):
        return {k: _plain(v) for k, v in attrs.asdict(value, recurse=False).items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return str(value) if hasattr(value, "value") else value


async def _directives(memory: Memory, arguments: argparse.Namespace) -> Any:
    book, agent = memory.directives, arguments.agent
    if arguments.action == "list":
        return await book.list(agent, status=arguments.status)
    if arguments.action == "add":
        return await book.create(agent, arguments.text, kind=arguments.kind)
    if arguments.action == "propose":
        return await book.propose(agent, arguments.text, kind=arguments.kind)
    if arguments.action == "approve":
        return await book.approve(agent, arguments.directive_id)
    return await book.revoke(agent, arguments.directive_id)


def _text(command: str, result: Any) -> str:
    if command == "clear":
        return str(result["summary"])
    if command == "retire":
        rows = ", ".join(f"{t} {n}" for t, n in result["rows_deleted"].items() if n)
        return f"agent {result['agent_id']} retired; deleted: {rows or 'nothing'}"
    if command == "forget":
        return (
            f"forgot {result['claim_id']}: removed {', '.join(result['removed'])};"
            f" kept {', '.join(result['kept'])}"
        )
    if command in {"archive", "unarchive"}:
        return str(result["note"])
    if command == "remember":
        return f"{result['outcome']} {result['claim_id'] or ''}".strip()
    items = result if isinstance(result, list) else [result]
    return "\n".join(
        f"{d['directive_id']} {d['status']:7} {d['kind']:14} {d['text']}" for d in items
    )


async def run(memory: Memory, arguments: argparse.Namespace) -> int:
    command, agent = arguments.command, arguments.agent
    result: Any
    if command == "clear":
        result = await memory.clear(agent)
    elif command == "retire":
        if not arguments.yes:
            raise InvalidInputError(
                "retire deletes every memory, evidence row and directive of the agent;"
                " pass --yes to confirm"
            )
        result = await memory.retire(agent)
    elif command == "forget":
        result = await memory.forget(agent, arguments.claim_id)
    elif command == "archive":
        result = await memory.archive(agent, arguments.claim_id)
    elif command == "unarchive":
        result = await memory.unarchive(agent, arguments.claim_id)
    elif command == "remember":
        result = await memory.remember(agent, arguments.text, kind=arguments.kind)
    else:
        result = await _directives(memory, arguments)
    plain = _plain(result)
    print(
        json.dumps(plain, ensure_ascii=False)
        if arguments.json
        else _text(command, plain)
    )
    return 0
