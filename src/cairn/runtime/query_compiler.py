"""The text model's query contract under its own deadline and breaker.

Off unless a text provider is configured and ``MemoryConfig.query_compile_s`` is above 0:
then each recall asks for a contract (cairn.query.compiled) and waits at most that long.
A miss, a provider error or an open breaker leaves the offline analysis standing, and the
recall's manifest says ``query_analysis_offline``. The breaker is the query embedder's
kind (cairn.providers.http.breaker): failures in a row open it for a cool-down, so a
stalled model costs one budget per recall for a few recalls, then nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs
import trio

from cairn.domain.degradation import Degradation
from cairn.providers.http.breaker import AbandonReason, CircuitBreaker, FailureKind
from cairn.providers.http.text import TextProvider
from cairn.query.compiled import (
    QUERY_SYSTEM_PROMPT,
    QueryContract,
    apply_contract,
    query_prompt,
)

if TYPE_CHECKING:
    import datetime as dt

    from cairn.query.analysis import QueryAnalysis

__all__ = ["QueryCompiler"]

logger = logging.getLogger("cairn.runtime")

# The contract is a few names and a shape.
QUERY_MAX_TOKENS = 200


@attrs.define(eq=False)
class QueryCompiler:
    provider: Callable[[], TextProvider | None]
    budget_s: float
    breaker: CircuitBreaker = attrs.field(factory=CircuitBreaker)

    @property
    def enabled(self) -> bool:
        return self.budget_s > 0 and self.provider() is not None

    async def compile(
        self, analysis: QueryAnalysis, question: str, now: dt.datetime
    ) -> tuple[QueryAnalysis, Degradation | None]:
        """The analysis the contract upgrades, or the offline one and why."""
        provider = self.provider()
        if self.budget_s <= 0 or provider is None:
            return analysis, None
        if not self.breaker.allow():
            return analysis, Degradation.QUERY_ANALYSIS_OFFLINE
        try:
            with trio.fail_after(self.budget_s):
                contract = await provider.complete_json(
                    QUERY_SYSTEM_PROMPT,
                    query_prompt(question, now),
                    QueryContract,
                    max_tokens=QUERY_MAX_TOKENS,
                )
        except trio.TooSlowError:
            self.breaker.record_failure(FailureKind.DEADLINE)
            return analysis, Degradation.QUERY_ANALYSIS_OFFLINE
        except trio.Cancelled:
            self.breaker.record_abandoned(AbandonReason.CANCELLED)
            raise
        except Exception as error:  # noqa: BLE001 - any provider failure: offline stands
            logger.warning("query contract failed: %s", type(error).__name__)
            self.breaker.record_failure(FailureKind.TRANSPORT)
            return analysis, Degradation.QUERY_ANALYSIS_OFFLINE
        self.breaker.record_success()
        return apply_contract(analysis, contract), None
