"""The embedded default embedder: real model, no network, normalised vectors, multilingual."""

from __future__ import annotations

import numpy as np

from cairn.providers.local import LocalE5Embedder
from cairn.runtime.threads import Limiters, run_in_thread


def _embedder() -> LocalE5Embedder:
    limiters = Limiters()
    return LocalE5Embedder(
        lambda function: run_in_thread(function, limiter=limiters.cpu)
    )


async def test_identity_and_shapes() -> None:
    embedder = _embedder()
    identity = embedder.identity
    assert identity.provider == "local"
    assert identity.dimension == 384
    documents = await embedder.embed_documents(
        ["I love oolong tea.", "我喜欢喝乌龙茶。"]
    )
    assert documents.shape == (2, 384)
    assert documents.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(documents, axis=1), 1.0, atol=1e-3)
    empty = await embedder.embed_documents([])
    assert empty.shape == (0, 384)


async def test_cross_lingual_similarity() -> None:
    embedder = _embedder()
    documents = await embedder.embed_documents(
        ["我喜欢喝乌龙茶。", "The train to Berlin leaves at noon."]
    )
    query = await embedder.embed_query("What tea does she like to drink?")
    similarities = documents @ query
    assert similarities[0] > similarities[1]


async def test_long_text_is_cut_not_refused() -> None:
    embedder = _embedder()
    vector = await embedder.embed_query("memory " * 5_000)
    assert vector.shape == (384,)
