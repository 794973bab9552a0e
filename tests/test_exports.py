"""The public surface is pinned: adding or removing a name is a deliberate act."""

from __future__ import annotations

import cairn
import cairn.errors
import cairn.hosts.asyncio_host
import cairn.ipc


def test_public_surface() -> None:
    assert sorted(cairn.__all__) == [
        "AgentState",
        "AgentStatistics",
        "AgentStatus",
        "Allocation",
        "AttentionItem",
        "AttentionKind",
        "BlockingDirectivesApi",
        "BlockingMemoryApi",
        "ClearReport",
        "Conflict",
        "Degradation",
        "Directive",
        "DirectiveKind",
        "DirectiveStatus",
        "DirectivesApi",
        "DomainClock",
        "DrainReport",
        "EmbedderIdentity",
        "Entity",
        "EntityAlias",
        "EntityRelation",
        "EventKind",
        "EvidenceItem",
        "ForgetResult",
        "ForgottenKind",
        "IngestReport",
        "IntakeOutcome",
        "IntakeRejection",
        "IntakeResult",
        "KeptCounts",
        "LifecycleResult",
        "Manifest",
        "Memory",
        "MemoryApi",
        "Metadata",
        "Recall",
        "RecallContext",
        "RecallItem",
        "RecallRecord",
        "RecallStatus",
        "ReconfigureReport",
        "RememberOutcome",
        "RememberResult",
        "RetireReport",
        "Role",
        "StatusReport",
        "SystemDomainClock",
        "TableCount",
        "TextModelIdentity",
        "Turn",
        "open_memory",
    ]
    for name in cairn.__all__:
        assert hasattr(cairn, name)


def test_ipc_surface() -> None:
    assert sorted(cairn.ipc.__all__) == [
        "BlockingClient",
        "Client",
        "PROTOCOL_VERSION",
        "ServerLimits",
        "messages",
        "open_client",
        "open_stdio_client",
        "open_unix_client",
    ]
    for name in cairn.ipc.__all__:
        assert hasattr(cairn.ipc, name)


def test_asyncio_host_surface() -> None:
    assert sorted(cairn.hosts.asyncio_host.__all__) == [
        "AsyncioDirectives",
        "AsyncioMemory",
        "open_asyncio_memory",
    ]


def test_every_error_derives_from_cairn_error() -> None:
    for name in cairn.errors.__all__:
        error = getattr(cairn.errors, name)
        assert issubclass(error, cairn.errors.CairnError)
