"""Structured JSON answers from Ollama's ``/api/chat`` with a JSON schema ``format``.

Non-streaming (``"stream": false``); ``options.num_predict`` is the token cap and
``temperature`` is 0. The answer is ``message.content``; ``done_reason == "length"`` (cut off
at the cap) or empty content is a :class:`~cairn.errors.ProviderContractError`. Ollama takes no
API key by default; a key is still sent when configured, for Ollama behind a proxy.
"""

from __future__ import annotations

from typing import Any, Final, TypeVar

import attrs
import httpx
import msgspec
import trio

from cairn.errors import ProviderContractError
from cairn.providers.http.client import post_json, safe_endpoint
from cairn.providers.http.text import (
    HttpTextConfig,
    TextIdentity,
    decode_answer,
    json_schema_for,
)

__all__ = ["OLLAMA_TEXT_PROVIDER", "OllamaTextProvider"]

OLLAMA_TEXT_PROVIDER: Final = "ollama"

S = TypeVar("S", bound=msgspec.Struct)


class _Message(msgspec.Struct):
    content: str = ""


class _ChatResponse(msgspec.Struct):
    message: _Message
    done_reason: str | None = None


_DECODER: Final = msgspec.json.Decoder(_ChatResponse)


@attrs.define(eq=False)
class OllamaTextProvider:
    """A :class:`~cairn.providers.http.text.TextProvider` over Ollama ``/api/chat``.

    Same error and cancellation contract as
    :class:`~cairn.providers.http.text_openai.OpenAICompatibleTextProvider`.
    """

    client: httpx.AsyncClient
    config: HttpTextConfig
    # Bounds this provider's requests in flight to config.max_concurrency.
    _limiter: trio.CapacityLimiter = attrs.field(init=False, repr=False)

    @_limiter.default
    def _new_limiter(self) -> trio.CapacityLimiter:
        return trio.CapacityLimiter(self.config.max_concurrency)

    @property
    def identity(self) -> TextIdentity:
        return TextIdentity(provider=OLLAMA_TEXT_PROVIDER, model=self.config.model)

    async def complete_json(
        self, system: str, user: str, schema: type[S], *, max_tokens: int
    ) -> S:
        max_tokens = self.config.token_cap(max_tokens)
        url = self.config.endpoint("/api/chat")
        payload: dict[str, Any] = {
            "model": self.config.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
            "stream": False,
            "format": json_schema_for(schema),
            "options": {"num_predict": max_tokens, "temperature": 0},
        }
        async with self._limiter:
            response = await post_json(
                self.client,
                url,
                payload,
                headers=self.config.headers(),
                decoder=_DECODER,
                retry=self.config.retry,
                http_timeout=self.config.timeout(),
            )
        endpoint = safe_endpoint(url)
        if response.done_reason == "length":
            raise ProviderContractError(
                f"{endpoint}: answer truncated at max_tokens={max_tokens}"
            )
        return decode_answer(response.message.content, schema, endpoint)
