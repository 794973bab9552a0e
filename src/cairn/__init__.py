"""cairn: long-term memory for AI agents.

Typed, sourced, time-aware memory in SQLite; before each model call, a bounded,
injection-safe context contribution::

    async with cairn.open_memory(path) as memory:
        await memory.ingest("agent-1", [cairn.Turn(...)])
        recall = await memory.recall("agent-1", "what does Ana like?")

``import cairn`` loads this module only: each public name loads the module that defines
it on first use. An IPC client therefore never pays for the engine (``Memory`` and
``open_memory`` bring SQLite, vectors and models), nor for the types it does not touch
(tests/ipc/test_light_client.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cairn.api.protocol import BlockingDirectivesApi as BlockingDirectivesApi
    from cairn.api.protocol import BlockingMemoryApi as BlockingMemoryApi
    from cairn.api.protocol import DirectivesApi as DirectivesApi
    from cairn.api.protocol import MemoryApi as MemoryApi
    from cairn.api.reports import AttentionItem as AttentionItem
    from cairn.api.reports import AttentionKind as AttentionKind
    from cairn.api.reports import ClearReport as ClearReport
    from cairn.api.reports import DrainReport as DrainReport
    from cairn.api.reports import EditReport as EditReport
    from cairn.api.reports import EmbedderIdentity as EmbedderIdentity
    from cairn.api.reports import Entity as Entity
    from cairn.api.reports import EntityAlias as EntityAlias
    from cairn.api.reports import EntityRelation as EntityRelation
    from cairn.api.reports import EvidenceItem as EvidenceItem
    from cairn.api.reports import IngestReport as IngestReport
    from cairn.api.reports import KeptCounts as KeptCounts
    from cairn.api.reports import LineageEntry as LineageEntry
    from cairn.api.reports import MemoryDetail as MemoryDetail
    from cairn.api.reports import MemoryItem as MemoryItem
    from cairn.api.reports import RecallRecord as RecallRecord
    from cairn.api.reports import ReconfigureReport as ReconfigureReport
    from cairn.api.reports import RetireReport as RetireReport
    from cairn.api.reports import TableCount as TableCount
    from cairn.api.reports import TextModelIdentity as TextModelIdentity
    from cairn.api.status import AgentState as AgentState
    from cairn.api.status import AgentStatistics as AgentStatistics
    from cairn.api.status import AgentStatus as AgentStatus
    from cairn.api.status import StatusReport as StatusReport
    from cairn.clock import DomainClock as DomainClock
    from cairn.clock import SystemDomainClock as SystemDomainClock
    from cairn.config import MemoryConfig as MemoryConfig
    from cairn.domain.directive import Directive as Directive
    from cairn.domain.directive import DirectiveKind as DirectiveKind
    from cairn.domain.directive import DirectiveStatus as DirectiveStatus
    from cairn.domain.evidence import EventKind as EventKind
    from cairn.domain.evidence import Role as Role
    from cairn.domain.evidence import Turn as Turn
    from cairn.domain.metadata import Metadata as Metadata
    from cairn.domain.outcomes import Conflict as Conflict
    from cairn.domain.outcomes import ForgetResult as ForgetResult
    from cairn.domain.outcomes import ForgottenKind as ForgottenKind
    from cairn.domain.outcomes import IntakeOutcome as IntakeOutcome
    from cairn.domain.outcomes import IntakeRejection as IntakeRejection
    from cairn.domain.outcomes import IntakeResult as IntakeResult
    from cairn.domain.outcomes import LifecycleResult as LifecycleResult
    from cairn.domain.outcomes import RememberOutcome as RememberOutcome
    from cairn.domain.outcomes import RememberResult as RememberResult
    from cairn.domain.scope import RecallContext as RecallContext
    from cairn.retrieval.types import Allocation as Allocation
    from cairn.retrieval.types import Degradation as Degradation
    from cairn.retrieval.types import Manifest as Manifest
    from cairn.retrieval.types import Recall as Recall
    from cairn.retrieval.types import RecallItem as RecallItem
    from cairn.retrieval.types import RecallStatus as RecallStatus
    from cairn.runtime.memory import Memory as Memory
    from cairn.runtime.memory import open_memory as open_memory

__version__ = "0.1.0"

__all__ = [
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
    "EditReport",
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
    "LineageEntry",
    "Manifest",
    "Memory",
    "MemoryApi",
    "MemoryDetail",
    "MemoryItem",
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

# Where each public name is defined (loaded on first access).
_DEFINED_IN = {
    "BlockingDirectivesApi": "cairn.api.protocol",
    "BlockingMemoryApi": "cairn.api.protocol",
    "DirectivesApi": "cairn.api.protocol",
    "MemoryApi": "cairn.api.protocol",
    "AttentionItem": "cairn.api.reports",
    "AttentionKind": "cairn.api.reports",
    "ClearReport": "cairn.api.reports",
    "DrainReport": "cairn.api.reports",
    "EmbedderIdentity": "cairn.api.reports",
    "Entity": "cairn.api.reports",
    "EntityAlias": "cairn.api.reports",
    "EntityRelation": "cairn.api.reports",
    "EditReport": "cairn.api.reports",
    "EvidenceItem": "cairn.api.reports",
    "IngestReport": "cairn.api.reports",
    "KeptCounts": "cairn.api.reports",
    "LineageEntry": "cairn.api.reports",
    "MemoryDetail": "cairn.api.reports",
    "MemoryItem": "cairn.api.reports",
    "RecallRecord": "cairn.api.reports",
    "ReconfigureReport": "cairn.api.reports",
    "RetireReport": "cairn.api.reports",
    "TableCount": "cairn.api.reports",
    "TextModelIdentity": "cairn.api.reports",
    "AgentState": "cairn.api.status",
    "AgentStatistics": "cairn.api.status",
    "AgentStatus": "cairn.api.status",
    "StatusReport": "cairn.api.status",
    "DomainClock": "cairn.clock",
    "SystemDomainClock": "cairn.clock",
    "MemoryConfig": "cairn.config",
    "Directive": "cairn.domain.directive",
    "DirectiveKind": "cairn.domain.directive",
    "DirectiveStatus": "cairn.domain.directive",
    "EventKind": "cairn.domain.evidence",
    "Role": "cairn.domain.evidence",
    "Turn": "cairn.domain.evidence",
    "Metadata": "cairn.domain.metadata",
    "Conflict": "cairn.domain.outcomes",
    "ForgetResult": "cairn.domain.outcomes",
    "ForgottenKind": "cairn.domain.outcomes",
    "IntakeOutcome": "cairn.domain.outcomes",
    "IntakeRejection": "cairn.domain.outcomes",
    "IntakeResult": "cairn.domain.outcomes",
    "LifecycleResult": "cairn.domain.outcomes",
    "RememberOutcome": "cairn.domain.outcomes",
    "RememberResult": "cairn.domain.outcomes",
    "RecallContext": "cairn.domain.scope",
    "Allocation": "cairn.retrieval.types",
    "Degradation": "cairn.retrieval.types",
    "Manifest": "cairn.retrieval.types",
    "Recall": "cairn.retrieval.types",
    "RecallItem": "cairn.retrieval.types",
    "RecallStatus": "cairn.retrieval.types",
    "Memory": "cairn.runtime.memory",
    "open_memory": "cairn.runtime.memory",
}


# Hidden from mypy, which sees the lazy names through the TYPE_CHECKING imports above: a
# module-level __getattr__ would make it accept any misspelt attribute of the package.
if not TYPE_CHECKING:

    def __getattr__(name: str) -> object:
        module = _DEFINED_IN.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value  # later lookups skip this hook
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *_DEFINED_IN})
