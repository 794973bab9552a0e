"""The per-agent exact vector projection.

A cache of the SQLite ``embeddings`` table: one flat, exactly searched matrix per (agent,
embedding identity), persisted atomically and rebuilt from float16 blobs when its file is
lost or damaged. Pure synchronous code: callers run it in worker threads. One writer thread
at a time per index, any number of concurrent searches (see :mod:`cairn.vectors.index`).
"""

from __future__ import annotations

from cairn.vectors.codec import blob_size, decode_vector, decode_vectors, encode_vector
from cairn.vectors.identity import METRICS, EmbeddingIdentity, Metric
from cairn.vectors.index import (
    ExactVectorIndex,
    ExportedVectors,
    IndexStatistics,
    Storage,
)
from cairn.vectors.manager import (
    QuarantineRecord,
    StoreStatistics,
    VectorStoreManager,
    agent_directory_name,
)
from cairn.vectors.publish import load_index, save_index

__all__ = [
    "METRICS",
    "EmbeddingIdentity",
    "ExactVectorIndex",
    "ExportedVectors",
    "IndexStatistics",
    "Metric",
    "QuarantineRecord",
    "Storage",
    "StoreStatistics",
    "VectorStoreManager",
    "agent_directory_name",
    "blob_size",
    "decode_vector",
    "decode_vectors",
    "encode_vector",
    "load_index",
    "save_index",
]
