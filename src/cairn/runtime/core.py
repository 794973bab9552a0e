"""The runtime's parts, owned together: what :class:`~cairn.runtime.memory.Memory` fronts.

``Memory`` validates and delegates; the parts it delegates to live here, private to the
facade. Operator code inside cairn (doctor, reindex, export and import, the CLI's status)
reaches them through :func:`runtime_core`, never through public fields.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from cairn.clock import DomainClock
from cairn.config import MemoryConfig
from cairn.providers.gateway import QueryEmbeddingGateway
from cairn.runtime.actors.write_coordinator import SharedWriter
from cairn.runtime.admission import WriteAdmission
from cairn.runtime.database import Database
from cairn.runtime.providers import ActiveEmbedder
from cairn.runtime.registry import AgentRegistry
from cairn.runtime.scrubbing import Scrubber
from cairn.runtime.switching import ProviderSwitch
from cairn.runtime.threads import Limiters
from cairn.vectors.manager import VectorStoreManager

if TYPE_CHECKING:
    from cairn.runtime.memory import Memory

__all__ = ["RuntimeCore", "runtime_core"]


@attrs.frozen(eq=False)
class RuntimeCore:
    path: Path
    config: MemoryConfig
    clock: DomainClock
    database: Database
    limiters: Limiters
    vectors: VectorStoreManager
    active: ActiveEmbedder
    gateway: QueryEmbeddingGateway
    registry: AgentRegistry
    admission: WriteAdmission
    switch: ProviderSwitch
    shared: SharedWriter
    scrubber: Scrubber


def runtime_core(memory: Memory) -> RuntimeCore:
    """The parts behind a facade (for cairn's own operator code and its tests)."""
    return memory._core  # noqa: SLF001 - the one door to the facade's parts
