"""Coding-agent hook adapters: ``cairn hook <host> <event>`` (design/hooks.md).

A host (Claude Code, Codex) runs the hook as a short-lived process; it normalises the
host's payload into one :class:`~cairn.hooks.envelope.TurnEnvelope`, talks to a running
``cairn serve`` over its socket through the blocking client, and fails open: any error
leaves the host with no context, an error line on stderr, and the captured turn in the
spool (cairn.hooks.spool) for a later call, or the next server to start, to ingest.

This package is the light side: it imports neither the typer CLI nor the runtime, so a
hook's process start stays well inside the hosts' timeouts (bench/hook_latency.py).
"""
