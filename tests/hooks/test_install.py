"""``cairn install`` / ``cairn uninstall`` round trip on a temporary HOME: the written
configuration has the hosts' documented shape, a user's own entries survive, and
uninstall restores every file exactly (or removes the ones install created)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess


def cairn(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "cairn", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=True,
    )


def snapshot(home: Path) -> dict[str, str]:
    return {
        str(path.relative_to(home)): path.read_text(encoding="utf-8")
        for path in sorted(home.rglob("*"))
        if path.is_file()
    }


def test_claude_code_round_trip_keeps_the_users_hooks(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    own = {
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-me"}]}]},
        "model": "x",
    }
    settings.write_text(json.dumps(own), encoding="utf-8")
    before = snapshot(tmp_path)

    dry = cairn(tmp_path, "install", "claude-code", "--dry-run")
    assert "+++" in dry.stdout
    assert snapshot(tmp_path) == before

    cairn(tmp_path, "install", "claude-code")
    written = json.loads(settings.read_text(encoding="utf-8"))
    assert written["model"] == "x"
    for event in ("SessionStart", "UserPromptSubmit", "Stop", "PreCompact"):
        hook = written["hooks"][event][-1]["hooks"][0]
        assert hook["type"] == "command"
        assert f"hook claude-code {event}" in hook["command"]
        assert isinstance(hook["timeout"], int)
    assert written["hooks"]["Stop"][0]["hooks"][0]["command"] == "notify-me"
    mcp = json.loads((tmp_path / ".claude.json").read_text(encoding="utf-8"))
    assert mcp["mcpServers"]["cairn"]["args"][-2:] == ["--tools", "none"]
    # Installing twice writes the same entries once.
    cairn(tmp_path, "install", "claude-code")
    assert json.loads(settings.read_text(encoding="utf-8")) == written

    cairn(tmp_path, "uninstall", "claude-code")
    after = snapshot(tmp_path)
    assert json.loads(after[".claude/settings.json"]) == own
    assert ".claude.json" not in after


def test_codex_round_trip_restores_config_toml(tmp_path: Path) -> None:
    config = tmp_path / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('model = "gpt-5"\n', encoding="utf-8")
    cairn(tmp_path, "install", "codex")
    parsed = tomllib.loads(config.read_text(encoding="utf-8"))
    assert parsed["model"] == "gpt-5"
    assert parsed["mcp_servers"]["cairn"]["args"] == [
        "mcp",
        "--agent",
        "codex",
        "--tools",
        "none",
    ]
    hooks = json.loads((tmp_path / ".codex" / "hooks.json").read_text(encoding="utf-8"))
    assert set(hooks["hooks"]) == {"SessionStart", "UserPromptSubmit", "Stop"}
    cairn(tmp_path, "uninstall", "codex")
    assert config.read_text(encoding="utf-8") == 'model = "gpt-5"\n'
    assert not (tmp_path / ".codex" / "hooks.json").exists()
