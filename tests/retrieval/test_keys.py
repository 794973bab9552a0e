"""Candidate keys: one text form, read back exactly; vector keys map to the candidate of
the same row."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cairn.retrieval.keys import CandidateKey, CandidateKind
from cairn.vectors.keys import EmbedTarget, VectorKey

keys = st.builds(CandidateKey, st.sampled_from(CandidateKind), st.integers(0, 2**62))


@given(keys)
def test_text_form_round_trips(key: CandidateKey) -> None:
    assert CandidateKey.parse(str(key)) == key


def test_text_form() -> None:
    assert str(CandidateKey.claim(7)) == "c:7"
    assert str(CandidateKey.event(12)) == "e:12"


@pytest.mark.parametrize("text", ["", "c", "c:", "x:1", "c:-1", "c:1a", "e:١", "c:1:2"])
def test_malformed_text_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a candidate key"):
        CandidateKey.parse(text)


def test_vector_keys_name_the_same_row() -> None:
    claim = VectorKey.decode(VectorKey(EmbedTarget.CLAIM, 3).encode())
    event = VectorKey.decode(VectorKey(EmbedTarget.EVENT, 3).encode())
    assert CandidateKey.from_vector(claim) == CandidateKey.claim(3)
    assert CandidateKey.from_vector(event) == CandidateKey.event(3)
