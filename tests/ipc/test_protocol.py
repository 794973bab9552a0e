"""The wire protocol without a process: frames cut at any byte boundary, every request has
exactly one handler and one result type, and server errors map to the same cairn errors."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cairn.errors import (
    CairnError,
    ConflictingEventError,
    DrainingError,
    InvalidInputError,
    InvalidTransitionError,
    ProtectedClaimError,
    ProtocolError,
    ServerBusyError,
)
from cairn.ipc.client import unwrap
from cairn.ipc.codes import ERROR_CODES, code_for, error_for
from cairn.ipc.dispatch import HANDLERS
from cairn.ipc.framing import (
    FrameReader,
    RejectedFrameError,
    decode_request,
    encode_frame,
)
from cairn.ipc.messages import (
    REQUESTS,
    RESULTS,
    Busy,
    Error,
    Hello,
    IngestTurnRequest,
    RecallRequest,
    StatusRequest,
    StatusResult,
    TurnMessage,
)


def test_every_request_has_one_handler_and_a_result() -> None:
    assert set(HANDLERS) == set(REQUESTS)
    request_tags = {kind.__struct_config__.tag for kind in REQUESTS}
    result_tags = {kind.__struct_config__.tag for kind in RESULTS}
    assert result_tags == {f"{tag}_result" for tag in request_tags}


def test_sample_frame_bytes_are_stable() -> None:
    """The exact bytes design/ipc.md shows."""
    assert encode_frame(StatusRequest(id=1)) == bytes.fromhex(
        "00000011 82 a474797065 a6737461747573 a26964 01"
    )
    assert encode_frame(Hello(versions=[1], client="demo")) == bytes.fromhex(
        "00000023 83 a474797065 a568656c6c6f a876657273696f6e73 9101"
        " a6636c69656e74 a464656d6f"
    )
    turn = TurnMessage(event_id="t1", session_id="s1", role="user", text="I love tea.")
    frame = encode_frame(IngestTurnRequest(id=1, agent_id="a1", turn=turn))
    assert len(frame) == 133
    assert frame.startswith(
        bytes.fromhex("00000081 84 a474797065 ab696e676573745f7475726e")
    )
    assert frame.endswith(
        bytes.fromhex("a46b696e64 a76d657373616765 a87265706c61636573 c0")
    )
    assert encode_frame(Busy(id=7, max_in_flight=32)) == bytes.fromhex(
        "0000001e 83 a474797065 a462757379 a26964 07 ad6d61785f696e5f666c69676874 20"
    )


@given(st.lists(st.integers(min_value=1, max_value=40), max_size=12), st.data())
def test_frames_survive_any_split(ids: list[int], data: st.DataObject) -> None:
    stream = b"".join(
        encode_frame(RecallRequest(id=i, agent_id="a", query="q" * i)) for i in ids
    )
    cuts = sorted(
        data.draw(st.lists(st.integers(0, len(stream)), max_size=8), label="cuts")
    )
    reader = FrameReader()
    decoded = []
    for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        reader.feed(stream[start:end])
        while (body := reader.next_frame()) is not None:
            decoded.append(decode_request(body).id)
    assert decoded == ids
    assert not reader.has_partial_frame


def test_oversize_header_is_rejected_before_the_body_arrives() -> None:
    reader = FrameReader(max_frame_bytes=100)
    reader.feed((101).to_bytes(4, "big"))
    with pytest.raises(RejectedFrameError) as caught:
        reader.next_frame()
    assert caught.value.code == "frame_too_large"


def test_negative_ids_and_wrong_fields_keep_what_can_be_known() -> None:
    with pytest.raises(RejectedFrameError) as caught:
        decode_request(msgspec.msgpack.encode({"type": "status", "id": -1}))
    assert caught.value.code == "malformed"
    with pytest.raises(RejectedFrameError) as caught:
        decode_request(msgspec.msgpack.encode({"type": "recall", "id": 3, "query": 1}))
    assert (caught.value.code, caught.value.request_id) == ("malformed", 3)


def test_error_codes_round_trip_to_the_same_class() -> None:
    for kind, code in ERROR_CODES:
        assert error_for(code, "m").__class__ is kind
    assert code_for(ConflictingEventError("e1")) == "conflicting_event"
    assert code_for(DrainingError("x")) == "draining"
    # Subclasses of InvalidInputError keep their own class over the wire.
    assert code_for(ProtectedClaimError("x")) == "protected_claim"
    assert code_for(InvalidTransitionError("x")) == "invalid_transition"
    assert isinstance(error_for("invalid_transition", "m"), InvalidInputError)
    assert isinstance(error_for("conflicting_event", "m"), InvalidInputError)
    # A code from a newer server is still a CairnError, never a crash.
    assert type(error_for("from_the_future", "m")) is CairnError
    assert isinstance(error_for("malformed", "m"), ProtocolError)


def test_unwrap_raises_what_the_answer_says() -> None:
    assert unwrap(StatusResult(id=1, status={}), StatusResult).id == 1
    with pytest.raises(ServerBusyError):
        unwrap(Busy(id=1, max_in_flight=4), StatusResult)
    with pytest.raises(DrainingError):
        unwrap(Error(id=1, code="draining", message="m"), StatusResult)
    with pytest.raises(ProtocolError):
        unwrap(Busy(id=1, max_in_flight=4).__class__, StatusResult)
