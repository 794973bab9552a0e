"""Settings for one HTTP embedding endpoint.

A frozen value type so it can be compared on a config switch (a changed identity is an epoch
change). The API key is referenced by environment variable name only (:class:`ApiKey`), and
the repr is hand-written so it stays safe even if a field is added carelessly later
(``test_config_repr_hides_key``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import attrs

from cairn.providers.http.client import (
    DEFAULT_RETRY,
    ApiKey,
    RetryPolicy,
    provider_timeout,
    safe_endpoint,
)
from cairn.vectors.identity import MAX_DIMENSION

if TYPE_CHECKING:
    import httpx

__all__ = ["MAX_QUERY_CODE_POINTS", "HttpEmbedderConfig"]

# Architecture section 8: only the first 2000 code points of a query are sent.
MAX_QUERY_CODE_POINTS: Final = 2000


@attrs.frozen(repr=False)
class HttpEmbedderConfig:
    """Where and how to reach one embedding model over HTTP.

    ``dimension`` is the vector size cairn expects (it is part of the embedding identity);
    with ``request_dimensions`` the OpenAI-compatible provider also asks the server for that
    size (Matryoshka models). ``max_batch_size`` is the provider's limit on inputs per request.
    ``connect_timeout_s`` / ``read_timeout_s`` apply to each request to this provider (the
    shared client may serve others with other timeouts; unset, the client's own apply); ``max_concurrency`` bounds this
    provider's requests in flight at once.
    """

    base_url: str
    model: str
    dimension: int = attrs.field(
        validator=[attrs.validators.ge(1), attrs.validators.le(MAX_DIMENSION)]
    )
    api_key: ApiKey | None = None
    request_dimensions: bool = False
    max_batch_size: int = attrs.field(default=64, validator=attrs.validators.ge(1))
    retry: RetryPolicy = DEFAULT_RETRY
    # None: the shared client's own timeout.
    connect_timeout_s: float | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.gt(0.0))
    )
    read_timeout_s: float | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.gt(0.0))
    )
    max_concurrency: int = attrs.field(default=4, validator=attrs.validators.ge(1))

    def __repr__(self) -> str:
        return (
            f"HttpEmbedderConfig(base_url={safe_endpoint(self.base_url)!r}, "
            f"model={self.model!r}, "
            f"dimension={self.dimension}, api_key={self.api_key!r}, "
            f"request_dimensions={self.request_dimensions}, "
            f"max_batch_size={self.max_batch_size}, "
            f"connect_timeout_s={self.connect_timeout_s}, "
            f"read_timeout_s={self.read_timeout_s}, "
            f"max_concurrency={self.max_concurrency})"
        )

    def timeout(self) -> httpx.Timeout | None:
        """The httpx timeout sent with each request to this provider (None: the client's)."""
        return provider_timeout(self.connect_timeout_s, self.read_timeout_s)

    def endpoint(self, path: str) -> str:
        """``base_url`` joined with ``path`` without doubling or dropping a slash."""
        return f"{self.base_url.rstrip('/')}/{path.lstrip('/')}"
