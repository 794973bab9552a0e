"""cairn: long-term memory for AI agents.

Typed, sourced, time-aware memory in SQLite; before each model call, a bounded,
injection-safe context contribution::

    async with cairn.open_memory(path) as memory:
        await memory.ingest("agent-1", [cairn.Turn(...)])
        recall = await memory.recall("agent-1", "what does Ana like?")
"""

from __future__ import annotations

from cairn.api.protocol import BlockingDirectivesApi as BlockingDirectivesApi
from cairn.api.protocol import BlockingMemoryApi as BlockingMemoryApi
from cairn.api.protocol import DirectivesApi as DirectivesApi
from cairn.api.protocol import MemoryApi as MemoryApi
from cairn.api.reports import ClearReport as ClearReport
from cairn.api.reports import DrainReport as DrainReport
from cairn.api.reports import EmbedderIdentity as EmbedderIdentity
from cairn.api.reports import IngestReport as IngestReport
from cairn.api.reports import KeptCounts as KeptCounts
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
from cairn.domain.outcomes import ForgetResult as ForgetResult
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
    "BlockingDirectivesApi",
    "BlockingMemoryApi",
    "ClearReport",
    "Degradation",
    "Directive",
    "DirectiveKind",
    "DirectiveStatus",
    "DirectivesApi",
    "DomainClock",
    "DrainReport",
    "EmbedderIdentity",
    "EventKind",
    "ForgetResult",
    "IngestReport",
    "IntakeOutcome",
    "IntakeRejection",
    "IntakeResult",
    "KeptCounts",
    "LifecycleResult",
    "Manifest",
    "Memory",
    "MemoryApi",
    "Recall",
    "RecallContext",
    "RecallItem",
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
