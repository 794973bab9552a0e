"""The projection key scheme: every (target, rowid) has one key that decodes back to it,
claim and event keys never collide, and claims order before events (ties rank by key)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cairn.vectors.keys import (
    EVENT_KEY_BASE,
    EmbedTarget,
    VectorKey,
    is_claim_key,
    vector_key,
)

rowids = st.integers(0, EVENT_KEY_BASE - 1)
targets = st.sampled_from(EmbedTarget)


@given(targets, rowids)
def test_a_key_decodes_to_its_target_and_rowid(target: EmbedTarget, rowid: int) -> None:
    key = vector_key(target, rowid)
    assert VectorKey.decode(key) == VectorKey(target, rowid)
    assert VectorKey.decode(np.int64(key)) == VectorKey(target, rowid)


@given(rowids, rowids)
def test_claim_keys_order_before_event_keys(claim: int, event: int) -> None:
    assert vector_key(EmbedTarget.CLAIM, claim) < vector_key(EmbedTarget.EVENT, event)


def test_rowids_outside_the_range_are_refused() -> None:
    for rowid in (-1, EVENT_KEY_BASE):
        with pytest.raises(ValueError, match="outside"):
            vector_key(EmbedTarget.CLAIM, rowid)
    for key in (-1, 2 * EVENT_KEY_BASE):
        with pytest.raises(ValueError, match="not a vector key"):
            VectorKey.decode(key)


def test_claim_mask_selects_exactly_the_claim_keys() -> None:
    keys = np.array(
        [
            vector_key(EmbedTarget.CLAIM, 1),
            vector_key(EmbedTarget.EVENT, 1),
            vector_key(EmbedTarget.CLAIM, EVENT_KEY_BASE - 1),
            vector_key(EmbedTarget.EVENT, 0),
        ],
        dtype=np.int64,
    )
    assert is_claim_key(keys).tolist() == [True, False, True, False]


def test_targets_are_the_stored_values() -> None:
    # embeddings.target has CHECK (target IN ('claim', 'event')).
    assert [target.value for target in EmbedTarget] == ["claim", "event"]
