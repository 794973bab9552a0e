"""Structured JSON answers from any OpenAI-compatible ``/v1/chat/completions`` endpoint.

The request carries ``response_format = {"type": "json_schema", "json_schema": {"name",
"schema", "strict": true}}``; OpenAI, vLLM, llama.cpp server and LM Studio honour it. Strict
mode on OpenAI itself wants every field required and no extra properties, so answer Structs
should have no defaults and use ``forbid_unknown_fields=True``.

The answer is ``choices[0].message.content``, a JSON string. A ``refusal``, no choices, empty
content or ``finish_reason == "length"`` (the answer was cut off at ``max_tokens``) is a
:class:`~cairn.errors.ProviderContractError`.
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
    schema_name,
)

__all__ = ["OPENAI_COMPAT_TEXT_PROVIDER", "OpenAICompatibleTextProvider"]

OPENAI_COMPAT_TEXT_PROVIDER: Final = "openai-compatible"

S = TypeVar("S", bound=msgspec.Struct)


class _Message(msgspec.Struct):
    content: str | None = None
    refusal: str | None = None


class _Choice(msgspec.Struct):
    message: _Message
    finish_reason: str | None = None


class _ChatResponse(msgspec.Struct):
    choices: list[_Choice]


_DECODER: Final = msgspec.json.Decoder(_ChatResponse)


@attrs.define(eq=False)
class OpenAICompatibleTextProvider:
    """A :class:`~cairn.providers.http.text.TextProvider` over ``/v1/chat/completions``.

    Temperature 0, one request per call; a cancelled call raises ``trio.Cancelled`` and is
    not retried.
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
        return TextIdentity(
            provider=OPENAI_COMPAT_TEXT_PROVIDER, model=self.config.model
        )

    async def complete_json(
        self, system: str, user: str, schema: type[S], *, max_tokens: int
    ) -> S:
        max_tokens = self.config.token_cap(max_tokens)
        url = self.config.endpoint("/v1/chat/completions")
        payload: dict[str, Any] = {
            "model": self.config.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
            self.config.token_limit_field: max_tokens,
            "temperature": 0,
            "response_format": {
                "type": "json_schema",
                "json_schema": {
                    "name": schema_name(schema),
                    "schema": json_schema_for(schema),
                    "strict": True,
                },
            },
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
        if not response.choices:
            raise ProviderContractError(f"{endpoint}: no choices in the answer")
        choice = response.choices[0]
        if choice.message.refusal:
            # The refusal text is model output about the caller's input: not quoted.
            raise ProviderContractError(f"{endpoint}: the model refused to answer")
        if choice.finish_reason == "length":
            raise ProviderContractError(
                f"{endpoint}: answer truncated at max_tokens={max_tokens}"
            )
        return decode_answer(choice.message.content, schema, endpoint)
