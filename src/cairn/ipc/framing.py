"""Frames: a 4-byte big-endian unsigned length, then that many bytes of MessagePack.

The reader is sync and transport-free (bytes in, frames out), so the trio server, the trio
client and the blocking client share it.
"""

from __future__ import annotations

import functools
import struct
import typing
from typing import Any

import attrs
import msgspec

from cairn.errors import ProtocolError
from cairn.ipc.messages import REQUESTS, RESULTS, Busy, Error, Hello, Request, Welcome

__all__ = [
    "CLIENT_MAX_FRAME_BYTES",
    "DEFAULT_MAX_FRAME_BYTES",
    "HEADER",
    "FrameReader",
    "RejectedFrameError",
    "decode_answer",
    "decode_hello",
    "decode_request",
    "encode_frame",
]

HEADER = struct.Struct(">I")
DEFAULT_MAX_FRAME_BYTES = 8 * 1024 * 1024
# The server's answers can be larger than what it accepts (a big status).
CLIENT_MAX_FRAME_BYTES = 4 * DEFAULT_MAX_FRAME_BYTES

_encoder = msgspec.msgpack.Encoder()


# Built on first use: a decoder resolves every type it can meet, and each side needs one of
# them only (a server never decodes answers, a client never requests), so neither pays at
# import for the other's (tests/ipc/test_light_client.py measures the client's import).
@functools.cache
def _request_decoder() -> msgspec.msgpack.Decoder[Any]:
    return msgspec.msgpack.Decoder(
        typing.Union[REQUESTS]  # noqa: UP007 - a union of a runtime tuple
    )


@functools.cache
def _answer_decoder() -> msgspec.msgpack.Decoder[Any]:
    return msgspec.msgpack.Decoder(typing.Union[(*RESULTS, Busy, Error, Welcome)])


@functools.cache
def _hello_decoder() -> msgspec.msgpack.Decoder[Hello]:
    return msgspec.msgpack.Decoder(Hello)


_tagged: list[type[msgspec.Struct]] = [*REQUESTS, Hello]
_known_types = {kind.__struct_config__.tag for kind in _tagged}


class RejectedFrameError(ProtocolError):
    """A frame the reader could not accept; ``code`` and ``request_id`` go on the error frame."""

    def __init__(self, code: str, message: str, request_id: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.request_id = request_id


def encode_frame(message: msgspec.Struct) -> bytes:
    """One message as a complete frame (header + body)."""
    buffer = bytearray(HEADER.size)
    _encoder.encode_into(message, buffer, HEADER.size)
    HEADER.pack_into(buffer, 0, len(buffer) - HEADER.size)
    return bytes(buffer)


@attrs.define(eq=False)
class FrameReader:
    """Accumulates bytes and cuts complete frame bodies off the front."""

    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    _buffer: bytearray = attrs.field(factory=bytearray, init=False)

    def feed(self, data: bytes | bytearray) -> None:
        self._buffer += data

    @property
    def has_partial_frame(self) -> bool:
        return bool(self._buffer)

    def next_frame(self) -> bytes | None:
        """The next complete body, or None until more bytes arrive.

        Raises RejectedFrameError (``frame_too_large``) as soon as a header announces more
        than ``max_frame_bytes``: the stream cannot be trusted after that, so the caller
        answers with an error frame and closes.
        """
        if len(self._buffer) < HEADER.size:
            return None
        (length,) = HEADER.unpack_from(self._buffer)
        if length > self.max_frame_bytes:
            raise RejectedFrameError(
                "frame_too_large",
                f"frame of {length} bytes exceeds the limit of {self.max_frame_bytes}",
            )
        end = HEADER.size + length
        if len(self._buffer) < end:
            return None
        body = bytes(self._buffer[HEADER.size : end])
        del self._buffer[:end]
        return body


# MessagePack type bytes of the scalars _leading_fields reads (besides the fixed ranges).
_CONSTANTS: dict[int, object] = {0xC0: None, 0xC2: False, 0xC3: True}
_STRINGS = {0xD9: 1, 0xDA: 2, 0xDB: 4}
_INTEGERS = {
    0xCC: (1, False),
    0xCD: (2, False),
    0xCE: (4, False),
    0xCF: (8, False),
    0xD0: (1, True),
    0xD1: (2, True),
    0xD2: (4, True),
    0xD3: (8, True),
}
_MAPS = {0xDE: 2, 0xDF: 4}


def _scalar(body: bytes, at: int) -> tuple[object, int] | None:
    """The string, integer, nil or boolean at ``at`` and the offset after it; None for
    anything else (a container, a float, bytes) or a truncated value."""
    if at >= len(body):
        return None
    first = body[at]
    if first <= 0x7F or first >= 0xE0:  # positive and negative fixint
        return (first if first <= 0x7F else first - 0x100), at + 1
    if first in _CONSTANTS:
        return _CONSTANTS[first], at + 1
    if 0xA0 <= first <= 0xBF:
        size, start = first & 0x1F, at + 1
    elif first in _STRINGS:
        width = _STRINGS[first]
        if at + 1 + width > len(body):
            return None
        size, start = int.from_bytes(body[at + 1 : at + 1 + width]), at + 1 + width
    elif first in _INTEGERS:
        width, signed = _INTEGERS[first]
        if at + 1 + width > len(body):
            return None
        value = int.from_bytes(body[at + 1 : at + 1 + width], signed=signed)
        return value, at + 1 + width
    else:
        return None
    if start + size > len(body):
        return None
    try:
        return body[start : start + size].decode("utf-8"), start + size
    except UnicodeDecodeError:
        return None


def _leading_fields(body: bytes) -> dict[str, object]:
    """The top-level map's leading entries whose key and value are scalars, read without
    descending into anything: enough to find ``type`` and ``id`` in a frame that cannot
    be decoded (a value nested past the decoder's depth limit), without recursing either.
    """
    if not body:
        return {}
    first = body[0]
    if 0x80 <= first <= 0x8F:
        pairs, at = first & 0x0F, 1
    elif first in _MAPS and len(body) > _MAPS[first]:
        width = _MAPS[first]
        pairs, at = int.from_bytes(body[1 : 1 + width]), 1 + width
    else:
        return {}
    fields: dict[str, object] = {}
    for _ in range(pairs):
        key = _scalar(body, at)
        if key is None or not isinstance(key[0], str):
            break
        value = _scalar(body, key[1])
        if value is None:
            break
        fields[key[0]] = value[0]
        at = value[1]
    return fields


def _too_deep(body: bytes) -> RejectedFrameError:
    request_id = _leading_fields(body).get("id")
    if (
        not isinstance(request_id, int)
        or isinstance(request_id, bool)
        or request_id < 0
    ):
        request_id = None
    return RejectedFrameError(
        "malformed", "the frame nests values too deeply to decode", request_id
    )


def _rejection(body: bytes, error: msgspec.MsgspecError) -> RejectedFrameError:
    """Say what was wrong, keeping the request ID when the frame has a readable one."""
    try:
        raw = msgspec.msgpack.decode(body)
    except msgspec.MsgspecError:
        return RejectedFrameError("malformed", f"not MessagePack: {error}")
    except RecursionError:
        return _too_deep(body)
    if not isinstance(raw, dict):
        return RejectedFrameError("malformed", "a frame must hold a map")
    request_id = raw.get("id")
    if not isinstance(request_id, int) or isinstance(request_id, bool):
        request_id = None
    kind = raw.get("type")
    if kind not in _known_types:
        return RejectedFrameError(
            "unknown_type", f"unknown message type {kind!r}", request_id
        )
    return RejectedFrameError("malformed", str(error), request_id)


def decode_request(body: bytes) -> Request:
    try:
        request: Request = _request_decoder().decode(body)
    except msgspec.MsgspecError as error:
        raise _rejection(body, error) from None
    except RecursionError:
        # msgspec refuses to nest deeper than its limit (about 1,000 levels) with
        # RecursionError, not a MsgspecError: still a malformed frame, not a crash.
        raise _too_deep(body) from None
    if request.id < 0:
        raise RejectedFrameError("malformed", "request IDs are unsigned integers")
    return request


def decode_hello(body: bytes) -> Hello:
    try:
        return _hello_decoder().decode(body)
    except msgspec.MsgspecError as error:
        rejection = _rejection(body, error)
    except RecursionError:
        rejection = _too_deep(body)
    raise RejectedFrameError(
        "handshake_required", f"the first frame must be hello ({rejection})"
    )


def decode_answer(body: bytes) -> Any:
    """A server frame (a result, ``busy``, ``error`` or ``welcome``)."""
    try:
        return _answer_decoder().decode(body)
    except (msgspec.MsgspecError, RecursionError) as error:
        raise ProtocolError(f"unreadable frame from the server: {error}") from None
