"""Trying a configured provider for real: identity, latency, and a typed, secret-free verdict.

``cairn providers check`` and status tooling call these. Each check makes a warm-up call (it
pays connection set-up and any model load) then a second, warm call, and times both on the
trio clock. The report is JSON-ready (plain dicts, strings and numbers); a failure is reported
as the error's class name and message, never raised, because a check's job is to describe the
provider, broken or not. Cancellation still propagates.

No report carries a secret: provider errors are already built without credentials (see
:mod:`cairn.providers.http.client`), and the configured key's value is scrubbed from every
message once more before it is reported (``test_check_reports_carry_no_secret``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import msgspec
import trio

from cairn.errors import ProviderContractError
from cairn.providers.http.client import ApiKey

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from cairn.providers.embedding import EmbeddingProvider, Vectors
    from cairn.providers.http.text import TextProvider

__all__ = ["check_embedder", "check_text_provider"]

_DEFAULT_TIMEOUT_S: Final = 30.0
_PROBE_QUERIES: Final = ("cairn providers check", "what does the user like?")
_PROBE_DOCUMENTS: Final = ("one", "two")
_MASK: Final = "***"
# Room for the tiny answer even on models that spend tokens thinking first.
_PROBE_MAX_TOKENS: Final = 64


class ProbeAnswer(msgspec.Struct):
    """The tiny answer a text provider is asked for."""

    ok: bool


def _milliseconds(seconds: float) -> float:
    return round(seconds * 1000, 1)


def _secret_of(provider: object) -> str | None:
    api_key = getattr(getattr(provider, "config", None), "api_key", None)
    return api_key.resolve() if isinstance(api_key, ApiKey) else None


def _error_report(error: BaseException, secret: str | None) -> dict[str, str]:
    message = str(error)
    if secret:
        message = message.replace(secret, _MASK)
    return {"type": type(error).__name__, "message": message}


async def _timed(
    name: str, call: Callable[[], Awaitable[None]], timeout_s: float
) -> float:
    """Milliseconds ``call`` took; TimeoutError if it took longer than ``timeout_s``."""
    started = trio.current_time()
    with trio.move_on_after(timeout_s) as scope:
        await call()
    if scope.cancelled_caught:
        raise TimeoutError(f"no answer within {timeout_s:g} s ({name})")
    return _milliseconds(trio.current_time() - started)


async def _timed_calls(
    report: dict[str, Any],
    calls: list[tuple[str, Callable[[], Awaitable[None]]]],
    secret: str | None,
    timeout_s: float,
) -> dict[str, Any]:
    """Run ``calls`` in order, recording each one's latency; stop at the first failure."""
    try:
        for name, call in calls:
            report[name] = await _timed(name, call, timeout_s)
    # A check describes whatever went wrong instead of raising it; Cancelled is a
    # BaseException and still propagates.
    except Exception as error:  # noqa: BLE001
        report.update(ok=False, error=_error_report(error, secret))
    else:
        report.update(ok=True, error=None)
    return report


async def check_embedder(
    embedder: EmbeddingProvider, *, timeout_s: float = _DEFAULT_TIMEOUT_S
) -> dict[str, Any]:
    """Identity, warm-up and warm query latency and a 2-document batch of ``embedder``.

    Report keys: ``kind`` ("embedding"), ``provider``, ``model``, ``dimension``,
    ``warm_up_ms``, ``warm_ms``, ``batch_of_2_ms`` (those that completed), ``ok`` and
    ``error`` (None, or ``{"type", "message"}``). Vectors of another dimension than the
    identity's are a ``ProviderContractError``. Each call is bounded by ``timeout_s``.
    """
    identity = embedder.identity
    dimension = identity.dimension
    report: dict[str, Any] = {
        "kind": "embedding",
        "provider": identity.provider,
        "model": identity.model,
        "dimension": dimension,
    }

    def check_shape(vectors: Vectors, expected: tuple[int, ...]) -> None:
        if vectors.shape != expected:
            raise ProviderContractError(
                f"embedder returned shape {vectors.shape}, expected {expected}"
            )

    async def query(text: str) -> None:
        check_shape(await embedder.embed_query(text), (dimension,))

    async def documents() -> None:
        vectors = await embedder.embed_documents(list(_PROBE_DOCUMENTS))
        check_shape(vectors, (len(_PROBE_DOCUMENTS), dimension))

    return await _timed_calls(
        report,
        [
            ("warm_up_ms", lambda: query(_PROBE_QUERIES[0])),
            ("warm_ms", lambda: query(_PROBE_QUERIES[1])),
            ("batch_of_2_ms", documents),
        ],
        _secret_of(embedder),
        timeout_s,
    )


async def check_text_provider(
    provider: TextProvider | None, *, timeout_s: float = _DEFAULT_TIMEOUT_S
) -> dict[str, Any]:
    """Identity and warm-up and warm latency of a small structured answer from ``provider``.

    Report keys: ``kind`` ("text"), ``provider``, ``model``, ``warm_up_ms``, ``warm_ms``,
    ``ok`` and ``error``. With no text provider configured (None) the report says so and is
    ok: running without one is a supported configuration.
    """
    if provider is None:
        await trio.lowlevel.checkpoint()
        return {
            "kind": "text",
            "provider": "none",
            "model": None,
            "ok": True,
            "error": None,
        }
    identity = provider.identity
    report: dict[str, Any] = {
        "kind": "text",
        "provider": identity.provider,
        "model": identity.model,
    }

    async def ask() -> None:
        await provider.complete_json(
            "You are a health check. Answer with JSON only.",
            'Reply with {"ok": true}.',
            ProbeAnswer,
            max_tokens=_PROBE_MAX_TOKENS,
        )

    return await _timed_calls(
        report,
        [("warm_up_ms", ask), ("warm_ms", ask)],
        _secret_of(provider),
        timeout_s,
    )
