"""``cairn install <host>`` / ``cairn uninstall <host>``: the hook and MCP configuration
cairn writes into a host's own files, and exactly that removed again (design/hooks.md).

Claude Code: ``~/.claude/settings.json`` gets one matcher group per event under
``hooks`` (command ``cairn hook claude-code <Event>``, timeout in seconds), and
``~/.claude.json`` an ``mcpServers.cairn`` stdio server (``cairn mcp --agent
claude-code --tools none``: the hooks already capture and recall).

Codex: ``~/.codex/hooks.json`` gets the same shape of groups (``cairn hook codex
<Event>``), and ``~/.codex/config.toml`` a ``[mcp_servers.cairn]`` table between two
marker comments, so uninstall removes that span and nothing else.

A group cairn wrote is recognised by its command (it starts with the cairn hook
command), so uninstall removes only those and leaves the user's own hooks untouched.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import attrs

__all__ = ["Change", "install", "uninstall"]

# Seconds the host waits for each hook (the hook's own budget is shorter).
HOOK_TIMEOUT_S = {
    "SessionStart": 10,
    "UserPromptSubmit": 10,
    "Stop": 30,
    "PreCompact": 30,
}
HOOK_BUDGET_S = {"SessionStart": 4, "UserPromptSubmit": 4, "Stop": 10, "PreCompact": 10}
EVENTS = {
    "claude-code": ("SessionStart", "UserPromptSubmit", "Stop", "PreCompact"),
    "codex": ("SessionStart", "UserPromptSubmit", "Stop"),
}
_TOML_BEGIN = "# >>> cairn mcp (written by cairn install codex)"
_TOML_END = "# <<< cairn mcp"


@attrs.frozen
class Change:
    """One file and its content before and after (None: the file does not exist, or
    is removed because nothing but cairn's entries was in it)."""

    path: Path
    before: str | None
    after: str | None

    @property
    def changed(self) -> bool:
        return self.before != self.after


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def _json(text: str | None) -> dict[str, Any]:
    if not text or not text.strip():
        return {}
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")  # noqa: TRY004 - bad input, exit 2
    return data


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _hook_command(cairn: str, host: str, event: str, agent: str | None) -> str:
    parts = [cairn, "hook", host, event, "--budget", str(HOOK_BUDGET_S[event])]
    if agent is not None:
        parts += ["--agent", agent]
    return shlex.join(parts)


def _ours(group: object, cairn: str, host: str) -> bool:
    prefix = shlex.join([cairn, "hook", host])
    hooks = group.get("hooks") if isinstance(group, dict) else None
    return isinstance(hooks, list) and any(
        isinstance(hook, dict) and str(hook.get("command", "")).startswith(prefix)
        for hook in hooks
    )


def _with_hooks(
    data: dict[str, Any], cairn: str, host: str, agent: str | None, *, add: bool
) -> dict[str, Any]:
    hooks = dict(data.get("hooks") or {})
    for event in EVENTS[host]:
        groups = [g for g in hooks.get(event, []) if not _ours(g, cairn, host)]
        if add:
            groups.append(
                {
                    "hooks": [
                        {
                            "type": "command",
                            "command": _hook_command(cairn, host, event, agent),
                            "timeout": HOOK_TIMEOUT_S[event],
                        }
                    ]
                }
            )
        if groups:
            hooks[event] = groups
        else:
            hooks.pop(event, None)
    result = dict(data)
    if hooks:
        result["hooks"] = hooks
    else:
        result.pop("hooks", None)
    return result


def _mcp_args(host: str, agent: str | None) -> list[str]:
    return ["mcp", "--agent", agent or host, "--tools", "none"]


def _claude_mcp(
    data: dict[str, Any], cairn: str, agent: str | None, *, add: bool
) -> dict[str, Any]:
    servers = dict(data.get("mcpServers") or {})
    if add:
        servers["cairn"] = {
            "type": "stdio",
            "command": cairn,
            "args": _mcp_args("claude-code", agent),
        }
    else:
        servers.pop("cairn", None)
    result = dict(data)
    if servers:
        result["mcpServers"] = servers
    else:
        result.pop("mcpServers", None)
    return result


def _codex_toml(
    text: str | None, cairn: str, agent: str | None, *, add: bool
) -> str | None:
    lines = (text or "").splitlines()
    if _TOML_BEGIN in lines and _TOML_END in lines:
        start, end = lines.index(_TOML_BEGIN), lines.index(_TOML_END)
        lines = lines[:start] + lines[end + 1 :]
        while lines and not lines[-1].strip():
            lines.pop()
    if add:
        args = ", ".join(json.dumps(arg) for arg in _mcp_args("codex", agent))
        block = [
            _TOML_BEGIN,
            "[mcp_servers.cairn]",
            f"command = {json.dumps(cairn)}",
            f"args = [{args}]",
            _TOML_END,
        ]
        lines = [*lines, "", *block] if lines else block
    if not lines:
        return None
    return "\n".join(lines) + "\n"


def _changes(
    home: Path, host: str, cairn: str, agent: str | None, *, add: bool
) -> list[Change]:
    if host == "claude-code":
        settings = home / ".claude" / "settings.json"
        config = home / ".claude.json"
        hooks_before, mcp_before = _read(settings), _read(config)
        hooks_after = _with_hooks(_json(hooks_before), cairn, host, agent, add=add)
        mcp_after = _claude_mcp(_json(mcp_before), cairn, agent, add=add)
        return [
            Change(
                settings,
                hooks_before,
                _dump(hooks_after) if hooks_after else None,
            ),
            Change(
                config,
                mcp_before,
                _dump(mcp_after) if mcp_after else None,
            ),
        ]
    if host == "codex":
        hooks_file = home / ".codex" / "hooks.json"
        config = home / ".codex" / "config.toml"
        hooks_before, toml_before = _read(hooks_file), _read(config)
        hooks_after = _with_hooks(_json(hooks_before), cairn, host, agent, add=add)
        return [
            Change(
                hooks_file,
                hooks_before,
                _dump(hooks_after) if hooks_after else None,
            ),
            Change(
                config, toml_before, _codex_toml(toml_before, cairn, agent, add=add)
            ),
        ]
    raise ValueError(f"unknown host {host!r}; one of claude-code, codex")


def _apply(changes: list[Change]) -> None:
    for change in changes:
        if not change.changed:
            continue
        if change.after is None:
            # Nothing of the user's is left in it: the file cairn created goes too.
            change.path.unlink(missing_ok=True)
            continue
        change.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = change.path.with_name(change.path.name + ".cairn-tmp")
        temporary.write_text(change.after, encoding="utf-8")
        temporary.replace(change.path)


def install(
    home: Path,
    host: str,
    cairn: str,
    agent: str | None = None,
    *,
    dry_run: bool = False,
) -> list[Change]:
    """Write ``host``'s hook and MCP configuration under ``home``; the changes."""
    changes = _changes(home, host, cairn, agent, add=True)
    if not dry_run:
        _apply(changes)
    return changes


def uninstall(
    home: Path, host: str, cairn: str, *, dry_run: bool = False
) -> list[Change]:
    """Remove what :func:`install` wrote for ``host`` under ``home``; the changes."""
    changes = _changes(home, host, cairn, None, add=False)
    if not dry_run:
        _apply(changes)
    return changes
