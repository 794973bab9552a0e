"""HTTP model providers: OpenAI-compatible and Ollama embedders, plus their call policy.

Building blocks of the provider gateway (architecture section 8): one shared httpx client and
a JSON POST with error mapping, retries and Retry-After (:mod:`.client`), the embedders and
text providers (each with its own timeouts and in-flight bound), the factories that build them
from settings over the shared client (:mod:`.factory`, imported directly to keep
``cairn.providers.settings`` free of an import cycle), the adaptive query deadline
(:mod:`.deadline`) and the query-embedding circuit breaker (:mod:`.breaker`). Internal to
cairn; the runtime wires them together.
"""

from __future__ import annotations

from cairn.providers.http.breaker import (
    AbandonReason as AbandonReason,
)
from cairn.providers.http.breaker import (
    BreakerState as BreakerState,
)
from cairn.providers.http.breaker import (
    CircuitBreaker as CircuitBreaker,
)
from cairn.providers.http.breaker import (
    FailureKind as FailureKind,
)
from cairn.providers.http.client import ApiKey as ApiKey
from cairn.providers.http.client import RetryAfterError as RetryAfterError
from cairn.providers.http.client import RetryPolicy as RetryPolicy
from cairn.providers.http.client import create_http_client as create_http_client
from cairn.providers.http.client import open_http_client as open_http_client
from cairn.providers.http.client import post_json as post_json
from cairn.providers.http.config import HttpEmbedderConfig as HttpEmbedderConfig
from cairn.providers.http.deadline import AdaptiveDeadline as AdaptiveDeadline
from cairn.providers.http.ollama import OllamaEmbedder as OllamaEmbedder
from cairn.providers.http.openai_compat import (
    OpenAICompatibleEmbedder as OpenAICompatibleEmbedder,
)
from cairn.providers.http.text import HttpTextConfig as HttpTextConfig
from cairn.providers.http.text import TextIdentity as TextIdentity
from cairn.providers.http.text import TextProvider as TextProvider
from cairn.providers.http.text_ollama import OllamaTextProvider as OllamaTextProvider
from cairn.providers.http.text_openai import (
    OpenAICompatibleTextProvider as OpenAICompatibleTextProvider,
)

__all__ = [
    "AbandonReason",
    "AdaptiveDeadline",
    "ApiKey",
    "BreakerState",
    "CircuitBreaker",
    "FailureKind",
    "HttpEmbedderConfig",
    "HttpTextConfig",
    "OllamaEmbedder",
    "OllamaTextProvider",
    "OpenAICompatibleEmbedder",
    "OpenAICompatibleTextProvider",
    "RetryAfterError",
    "RetryPolicy",
    "TextIdentity",
    "TextProvider",
    "create_http_client",
    "open_http_client",
    "post_json",
]
