"""The wire protocol without a process: frames cut at any byte boundary, every request has
exactly one handler, one result type and one client-side builder, every public report
crosses the wire unchanged, and server errors map to the same cairn errors."""

from __future__ import annotations

from typing import Any

import attrs
import msgspec
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.helpers import turn

from cairn import (
    AgentState,
    AgentStatistics,
    AgentStatus,
    ClearReport,
    Conflict,
    DrainReport,
    EmbedderIdentity,
    Entity,
    EntityAlias,
    EntityRelation,
    EvidenceItem,
    IntakeOutcome,
    IntakeRejection,
    IntakeResult,
    KeptCounts,
    RecallContext,
    ReconfigureReport,
    RetireReport,
    StatusReport,
    TextModelIdentity,
)
from cairn.domain.ids import EventId
from cairn.domain.scope import Scope
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
from cairn.ipc import codec, requests
from cairn.ipc.codes import ERROR_CODES, code_for, error_for
from cairn.ipc.dispatch import HANDLERS
from cairn.ipc.framing import (
    FrameReader,
    RejectedFrameError,
    decode_answer,
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
    IngestTurnResult,
    RecallRequest,
    StatusRequest,
    StatusResult,
    TurnMessage,
    Welcome,
)
from cairn.ipc.requests import Call, unwrap


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
    assert encode_frame(Hello(versions=[2], client="demo")) == bytes.fromhex(
        "00000023 83 a474797065 a568656c6c6f a876657273696f6e73 9102"
        " a6636c69656e74 a464656d6f"
    )
    turn = TurnMessage(event_id="t1", session_id="s1", role="user", text="I love tea.")
    frame = encode_frame(IngestTurnRequest(id=1, agent_id="a1", turn=turn))
    assert len(frame) == 143
    assert frame.startswith(
        bytes.fromhex("0000008b 84 a474797065 ab696e676573745f7475726e")
    )
    assert frame.endswith(
        bytes.fromhex(
            "a46b696e64 a76d657373616765 a87265706c61636573 c0 a86d65746164617461 c0"
        )
    )
    welcome = Welcome(
        version=2, server="cairn 0.1.0", max_frame_bytes=8388608, max_in_flight=32
    )
    assert encode_frame(welcome) == bytes.fromhex(
        "0000004e 85 a474797065 a777656c636f6d65 a776657273696f6e 02"
        " a6736572766572 ab636169726e20302e312e30"
        " af6d61785f6672616d655f6279746573 ce00800000"
        " ad6d61785f696e5f666c69676874 20"
    )
    ingested = IntakeResult(EventId("t1"), IntakeOutcome.INGESTED, rowid=1)
    assert encode_frame(IngestTurnResult(id=1, result=ingested)) == bytes.fromhex(
        "00000072 83 a474797065 b2696e676573745f7475726e5f726573756c74 a26964 01"
        " a6726573756c74 87 a86576656e745f6964 a27431"
        " a76f7574636f6d65 a8696e676573746564 a6726561736f6e c0"
        " aa726564616374696f6e73 00 a972656a656374696f6e c0"
        " a5726f776964 01 a87365676d656e7473 01"
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
    status = StatusReport("/data", EmbedderIdentity("hashing", "h", 64, "cos"), ())
    assert unwrap(StatusResult(id=1, status=status), StatusResult).id == 1
    with pytest.raises(ServerBusyError):
        unwrap(Busy(id=1, max_in_flight=4), StatusResult)
    with pytest.raises(DrainingError):
        unwrap(Error(id=1, code="draining", message="m"), StatusResult)
    with pytest.raises(ProtocolError):
        unwrap(Busy(id=1, max_in_flight=4).__class__, StatusResult)


def _statistics() -> AgentStatistics:
    values: dict[str, Any] = {
        field.name: index for index, field in enumerate(attrs.fields(AgentStatistics))
    }
    return AgentStatistics(**{**values, "reindexing": True})


IDENTITY = EmbedderIdentity("openai-compatible", "embed-b", 12, "cos")
REPORTS: list[tuple[Call[Any, Any], Any]] = [
    (
        requests.clear("a"),
        ClearReport(
            "a",
            3,
            ("claims", "claim vectors"),
            ("evidence",),
            KeptCounts(events=5, directives=1, tombstones=2),
            "memories cleared",
        ),
    ),
    (
        requests.retire("a"),
        RetireReport.of("a", {"claims": 3, "events": 5, "directives": 0}),
    ),
    (
        requests.status(),
        StatusReport(
            "/data",
            IDENTITY,
            (
                AgentStatus(
                    "a",
                    AgentState.RUNNING,
                    events=5,
                    epoch=2,
                    query_breaker="closed",
                    vector_identity=IDENTITY,
                    statistics=_statistics(),
                ),
                AgentStatus(
                    "b", AgentState.FAILED, failure="StoreError: disk", restarts=2
                ),
            ),
        ),
    ),
    (requests.drain(), DrainReport(agents=2, elapsed_s=0.25)),
    (
        requests.reconfigure(),
        ReconfigureReport(True, IDENTITY, TextModelIdentity("ollama", "qwen")),
    ),
    (requests.reconfigure(), ReconfigureReport(False, IDENTITY, None)),
    (
        requests.ingest_event("a", turn("e1", "x")),
        IntakeResult(
            EventId("e1"),
            IntakeOutcome.REJECTED,
            "replaced message 'm0' is not in session 's1'",
            rejection=IntakeRejection.UNKNOWN_REPLACED_EVENT,
        ),
    ),
    (
        requests.resolve_conflict("a", "k1", keep="c2"),
        Conflict(
            conflict_id="k1",
            claim_ids=("c1", "c2"),
            texts=("The user lives in Berlin", "The user lives in Lisbon"),
            reason="same_time",
            status="resolved",
            scope="session",
            scope_key="s1",
            created_at="2026-01-01T00:00:00+00:00",
            resolution="keep_one",
            kept="c2",
            resolved_at="2026-01-02T00:00:00+00:00",
        ),
    ),
    (
        requests.entities("a"),
        [
            Entity(
                entity_id=2,
                kind="person",
                name="Melanie",
                aliases=(
                    EntityAlias("Melanie", "speaker", ("e2",)),
                    EntityAlias("Mel", "nickname", ("e1", "e3")),
                ),
                mentions=3,
                relations=(
                    EntityRelation(
                        "sister_of",
                        "Caroline",
                        outgoing=False,
                        claim_id="c4",
                        valid_from="2026-01-05T09:00:00+00:00",
                    ),
                    EntityRelation(
                        "lives_in",
                        "Lisbon",
                        outgoing=True,
                        claim_id="c5",
                        valid_from="2025-03-01T00:00:00+00:00",
                        valid_until="2026-01-01T00:00:00+00:00",
                    ),
                ),
            ),
            Entity(3, "place", "Lisbon", (EntityAlias("里斯本", "translation"),), 1),
        ],
    ),
    (
        requests.evidence("a", ["c1", "e2", "gone"]),
        [
            EvidenceItem(
                ref="c1",
                state="present",
                event_id="e1",
                claim_id="c1",
                session_id="s1",
                role="user",
                speaker="Ana",
                kind="message",
                at="2026-01-01T09:00:00+00:00",
                text="I live in Berlin.",
            ),
            EvidenceItem("e2", "hidden", event_id="e2"),
            EvidenceItem("gone", "forgotten", event_id="gone"),
        ],
    ),
]


def _answer_for(call: Call[Any, Any], value: Any) -> Any:
    """The result Struct a server builds for ``value`` (its public record field)."""
    fields = {field for field in call.answer_type.__struct_fields__ if field != "id"}
    (field,) = fields
    return call.answer_type(id=7, **{field: value})


@pytest.mark.parametrize(("call", "value"), REPORTS)
def test_reports_cross_the_wire_unchanged(call: Call[Any, Any], value: Any) -> None:
    """What the server encodes is what every client decodes: the same public record."""
    frame = encode_frame(_answer_for(call, value))
    reader = FrameReader()
    reader.feed(frame)
    body = reader.next_frame()
    assert body is not None
    assert call.result(decode_answer(body)) == value


def test_every_request_has_one_builder() -> None:
    """The clients build every request through cairn.ipc.requests, and nothing else."""
    calls = [
        requests.ingest("a", [turn("t1", "x")]),
        requests.ingest_turn("a", turn("t1", "x")),
        requests.ingest_event("a", turn("t1", "x")),
        requests.declare_session("a", "s1", subagent=True, forked_from=("s0", "t0")),
        requests.session_cursor("a", "s1"),
        requests.replay_dead_letters("a"),
        requests.wait_idle(),
        requests.recall("a", "tea"),
        requests.fetch_recall("a", "r1"),
        requests.recalls("a", session_id="s1"),
        requests.feedback("a", "r1", used=["c1"], wrong=["c2"]),
        requests.maintain("a"),
        requests.attention("a"),
        requests.consume_attention("a", [1, 2]),
        requests.clear("a"),
        requests.wait_cleared("a"),
        requests.remember("a", "x", scope=Scope.session("s1"), by="user"),
        requests.forget("a", "c1"),
        requests.archive("a", "c1"),
        requests.unarchive("a", "c1"),
        requests.conflicts("a", include_resolved=True),
        requests.resolve_conflict("a", "k1", keep="both"),
        requests.entities("a", name="Mel", limit=5),
        requests.evidence("a", ["e1", "c1"]),
        requests.memories("a", kind="fact", text="Berlin", limit=5),
        requests.memory("a", "c1"),
        requests.edit("a", "c1", "I live in Munich."),
        requests.retire("a"),
        requests.add_directive("a", "x"),
        requests.directives_create("a", "x"),
        requests.directives_propose("a", "x"),
        requests.directives_approve("a", "d1"),
        requests.directives_revoke("a", "d1"),
        requests.directives_list("a", status="draft"),
        requests.reconfigure(),
        requests.status(),
        requests.drain(1.0),
        requests.resume(),
        requests.ping(),
    ]
    assert sorted(type(call.request).__name__ for call in calls) == sorted(
        kind.__name__ for kind in REQUESTS
    )
    for call in calls:
        tag = type(call.request).__struct_config__.tag
        assert call.answer_type.__struct_config__.tag == f"{tag}_result"
        numbered = call.numbered(9)
        assert numbered.id == 9
        assert call.request.id == 0  # the spec itself stays unnumbered
        assert decode_request(encode_frame(numbered)[4:]) == numbered


def test_recall_requests_carry_the_context_as_embedded_recall_reads_it() -> None:
    shorthand = requests.recall("a", "tea", session_id="s1").request
    assert isinstance(shorthand, RecallRequest)
    assert (shorthand.session_id, shorthand.user_id) == ("s1", None)
    # A context wins over the shorthand, as in Memory.recall.
    context = RecallContext(user_id="u1")
    both = requests.recall("a", "tea", context=context, session_id="s1").request
    assert isinstance(both, RecallRequest)
    assert (both.session_id, both.user_id) == (None, "u1")


def test_query_vectors_travel_as_plain_floats() -> None:
    assert codec.vector_to_message((1, 0.5)) == [1.0, 0.5]
    assert codec.vector_to_message(iter([0.25])) == [0.25]
    array = np.asarray([[0.5, 0.25]], dtype=np.float32)
    assert codec.vector_to_message(array) == [0.5, 0.25]
    request = requests.recall("a", "tea", query_vector=array[0]).request
    assert isinstance(request, RecallRequest)
    assert request.query_vector == [0.5, 0.25]


def test_turns_and_scopes_round_trip_through_the_codec() -> None:
    original = turn("t1", "I love tea.")
    assert codec.turn_from_message(codec.turn_to_message(original)) == original
    scope = Scope.session("s1")
    assert codec.scope_from_message(codec.scope_to_message(scope)) == scope
    assert codec.scope_from_message(None) is None


def test_a_remember_that_does_not_say_who_remembers_is_refused() -> None:
    # A host forwarding a model's remember without `by` must not release a tombstone.
    frame = {"type": "remember", "id": 7, "agent_id": "a", "text": "I like tea."}
    with pytest.raises(RejectedFrameError) as caught:
        decode_request(msgspec.msgpack.encode(frame))
    assert (caught.value.code, caught.value.request_id) == ("malformed", 7)
    assert "by" in str(caught.value)
    decode_request(msgspec.msgpack.encode({**frame, "by": "model"}))
