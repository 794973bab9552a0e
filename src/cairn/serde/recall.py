"""The recall boundary: ``Recall`` values to and from plain data (JSON, stored late results)."""

from __future__ import annotations

from typing import Any

import cattrs
import msgspec

from cairn.retrieval.types import Recall

__all__ = ["converter", "recall_from_bytes", "recall_to_bytes", "recall_to_dict"]

converter = cattrs.Converter()
_encoder = msgspec.json.Encoder()


def recall_to_dict(recall: Recall) -> dict[str, Any]:
    data: dict[str, Any] = converter.unstructure(recall)
    return data


def recall_to_bytes(recall: Recall) -> bytes:
    return _encoder.encode(recall_to_dict(recall))


def recall_from_bytes(payload: bytes) -> Recall:
    return converter.structure(msgspec.json.decode(payload), Recall)
