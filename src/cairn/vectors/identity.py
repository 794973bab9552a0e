"""Embedding identity: which embedder produced a vector projection.

Vectors from different providers, models, dimensions or metrics are not comparable, so every
projection file and every in-memory index is keyed by the identity that built it. Loading a
file under another identity is refused (:class:`~cairn.errors.VectorIdentityMismatchError`)
instead of silently mixing spaces.
"""

from __future__ import annotations

import hashlib
import json
from typing import Final, Literal, cast, get_args

import attrs

__all__ = ["MAX_DIMENSION", "METRICS", "EmbeddingIdentity", "Metric"]

Metric = Literal["cos", "ip", "l2sq"]
METRICS: Final[frozenset[str]] = frozenset(get_args(Metric))

# File headers store the dimension as u32; real embedders stay far below this bound, and a
# bound keeps a corrupt sidecar from asking for a terabyte allocation.
MAX_DIMENSION: Final = 65_536

# Length of key(): 64 bits of SHA-256 are plenty to tell a handful of identities apart.
_KEY_HEX_CHARS: Final = 16


# Validators take ``object``: attrs runs them on whatever an untyped caller passed.
def _non_blank(_: object, attribute: attrs.Attribute[str], value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{attribute.name} must be a non-blank string")


def _dimension(_: object, attribute: attrs.Attribute[int], value: object) -> None:
    # bool is an int subclass; True is not a dimension.
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{attribute.name} must be an int, not {type(value).__name__}")
    if not 0 < value <= MAX_DIMENSION:
        raise ValueError(f"{attribute.name} must be in 1..{MAX_DIMENSION}, got {value}")


def _metric(_: object, attribute: attrs.Attribute[str], value: object) -> None:
    if value not in METRICS:
        raise ValueError(
            f"{attribute.name} must be one of {sorted(METRICS)}, got {value!r}"
        )


@attrs.frozen
class EmbeddingIdentity:
    """``(provider, model, dimension, metric)`` of the embedder behind a projection.

    ``metric`` is the distance the index ranks by: ``cos`` (cosine), ``ip`` (inner product)
    or ``l2sq`` (squared Euclidean). Normalising vectors is the embedder's job.
    """

    provider: str = attrs.field(validator=_non_blank)
    model: str = attrs.field(validator=_non_blank)
    dimension: int = attrs.field(validator=_dimension)
    metric: Metric = attrs.field(default="cos", validator=_metric)

    def key(self) -> str:
        """A short, stable lowercase hex digest of the fields, safe as a file name.

        Stable across processes and versions: it names files on disk, so it must not depend
        on ``hash()`` randomisation or field order.
        """
        digest = hashlib.sha256(self._canonical_json().encode("utf-8")).hexdigest()
        return digest[:_KEY_HEX_CHARS]

    def as_dict(self) -> dict[str, str | int]:
        """The identity as a JSON-ready mapping (the sidecar written into vector files)."""
        return {
            "provider": self.provider,
            "model": self.model,
            "dimension": self.dimension,
            "metric": self.metric,
        }

    @classmethod
    def from_dict(cls, data: object) -> EmbeddingIdentity:
        """Parse :meth:`as_dict` output; raise ``ValueError``/``TypeError`` on anything else.

        Strict on purpose: the input comes from files that may be damaged, so unknown keys
        and wrong types are errors rather than guesses.
        """
        if not isinstance(data, dict):
            raise TypeError(f"identity must be a mapping, not {type(data).__name__}")
        expected = {"provider", "model", "dimension", "metric"}
        if set(data) != expected:
            raise ValueError(
                f"identity fields must be exactly {sorted(expected)}, got {sorted(map(str, data))}"
            )
        provider, model = data["provider"], data["model"]
        dimension, metric = data["dimension"], data["metric"]
        if not isinstance(provider, str) or not isinstance(model, str):
            raise TypeError("identity provider and model must be strings")
        if not isinstance(dimension, int) or isinstance(dimension, bool):
            raise TypeError("identity dimension must be an integer")
        if not isinstance(metric, str) or metric not in METRICS:
            raise ValueError(f"identity metric must be one of {sorted(METRICS)}")
        return cls(provider, model, dimension, cast("Metric", metric))

    def _canonical_json(self) -> str:
        return json.dumps(
            self.as_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=True
        )
