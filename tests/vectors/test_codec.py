"""Invariant: an embedding blob is exactly 2 * dimension bytes of little-endian float16 that
decodes back to the float16-rounded vector; a blob of the wrong length or with non-finite
values is refused with InvalidInputError naming it, never guessed at."""

import struct

import numpy as np
import pytest

from cairn.errors import InvalidInputError
from cairn.vectors import blob_size, decode_vector, decode_vectors, encode_vector


def test_blob_bytes_are_little_endian_float16() -> None:
    assert encode_vector(np.array([1.0, -2.0, 0.5], dtype=np.float32)) == struct.pack(
        "<eee", 1.0, -2.0, 0.5
    )
    assert blob_size(384) == 768


def test_round_trip_equals_float16_rounding() -> None:
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((5, 12))
    blobs = [encode_vector(vector) for vector in vectors]
    assert all(len(blob) == blob_size(12) for blob in blobs)
    decoded = decode_vectors(blobs, 12)
    assert decoded.dtype == np.float16
    assert decoded.shape == (5, 12)
    np.testing.assert_array_equal(decoded, vectors.astype(np.float16))
    np.testing.assert_array_equal(
        decode_vector(blobs[2], 12), vectors[2].astype(np.float16)
    )
    decoded[0, 0] = 7  # writable: the index may adopt it


def test_empty_batch_decodes_to_empty_matrix() -> None:
    assert decode_vectors([], 8).shape == (0, 8)


def test_wrong_length_blob_is_named() -> None:
    good = encode_vector(np.ones(4, dtype=np.float32))
    with pytest.raises(InvalidInputError, match=r"blob 1 has 6 bytes.*exactly 8"):
        decode_vectors([good, good[:6], good], 4)
    with pytest.raises(InvalidInputError, match="blob 0"):
        decode_vectors([good + b"\x00\x00"], 4)


def test_non_finite_values_are_refused() -> None:
    with pytest.raises(InvalidInputError):
        encode_vector(np.array([1.0, np.nan], dtype=np.float32))
    with pytest.raises(InvalidInputError):
        encode_vector(np.array([1.0, 1e6], dtype=np.float32))  # overflows float16
    nan_blob = struct.pack("<ee", 1.0, float("nan"))
    with pytest.raises(InvalidInputError, match="blob 1"):
        decode_vectors([struct.pack("<ee", 1.0, 2.0), nan_blob], 2)


@pytest.mark.parametrize(
    "vector",
    [
        np.ones((2, 2), dtype=np.float32),
        np.array([], dtype=np.float32),
        np.array([1, 2, 3]),
    ],
)
def test_encode_refuses_non_vectors(vector: np.ndarray) -> None:
    with pytest.raises(InvalidInputError):
        encode_vector(vector)


def test_non_positive_dimension_is_refused() -> None:
    with pytest.raises(InvalidInputError):
        decode_vectors([], 0)
