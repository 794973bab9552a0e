"""The MCP surface's vocabulary: its tools, the default agent, ``--tools``.

Apart from the server (cairn.hosts.mcp_server) so the command line reads it without
importing the MCP SDK, which only ``cairn mcp`` needs (the ``mcp`` extra).
"""

from __future__ import annotations

import enum

from cairn.errors import InvalidInputError

__all__ = ["DEFAULT_MCP_AGENT", "TOOL_NAMES", "McpTools", "McpUnavailableError"]

# The agent an MCP host's memory lives under unless ``--agent`` names another: its own,
# so an MCP host never shares memory with a hook-driven host by accident.
DEFAULT_MCP_AGENT = "mcp"
TOOL_NAMES = (
    "cairn_recall",
    "cairn_remember",
    "cairn_observe",
    "cairn_forget",
    "cairn_evidence",
    "cairn_memories",
    "cairn_memory",
    "cairn_stats",
    "cairn_audit",
)


class McpTools(enum.StrEnum):
    """``cairn mcp --tools``: every tool, or none (hooks already recall and capture)."""

    FULL = "full"
    NONE = "none"


class McpUnavailableError(InvalidInputError):
    """``cairn mcp`` was asked for, but the MCP SDK (the ``mcp`` extra) is not installed."""
