"""The history checker's verdicts (cairn.stress.model): what a history of concurrent,
crashed and refused calls says must be recallable, must never be, or cannot be told."""

from __future__ import annotations

from typing import Any

from cairn.stress.history import Call, History, Outcome
from cairn.stress.markers import holds_marker
from cairn.stress.model import ForgetEffect, Forgot, Restored, expectations
from cairn.stress.workload import ATTRIBUTE, Kind, Operation, Phase, Workload

A = "agent-0"
M = "qbcdfghjkl"
# What a forget of the turn e1, and of the claim learned from it, report.
TURN_FORGOTTEN = Forgot(ForgetEffect.ERASED, "evidence", "e1", frozenset({"e1"}))
CLAIM_FORGOTTEN = Forgot(ForgetEffect.HIDDEN, "preference", "c1", frozenset({"e1"}))


def _write(kind: Kind = Kind.INGEST, marker: str = M) -> Operation:
    return Operation(kind, A, marker, None, "e1", "s0", f"My code word is {marker}.")


def _workload(*operations: Operation) -> Workload:
    return Workload(1, (A,), (Phase((tuple(operations),), False, False),))


def _run(
    history: History,
    operation: Operation,
    outcome: Outcome = Outcome.OK,
    result: object = None,
) -> Call:
    call = history.invoke(operation, 0)
    history.complete(call, outcome, result=result)
    return call


def _verdict(history: History, *operations: Operation) -> str:
    expected = expectations(_workload(*operations), history)
    if M in expected.live.get(A, set()) or M in expected.directives.get(A, set()):
        return "live"
    if M in expected.gone.get(A, set()):
        return "erased" if M in expected.erased else "gone"
    return "undecided"


def test_an_acknowledged_write_must_be_recallable() -> None:
    history = History()
    write = _write()
    _run(history, write)
    assert _verdict(history, write) == "live"


def test_a_refused_write_must_leave_nothing() -> None:
    history = History()
    write = _write()
    _run(history, write, Outcome.FAIL)
    assert _verdict(history, write) == "gone"


def test_a_write_cut_off_by_a_crash_is_undecided_until_a_clear() -> None:
    history = History()
    write, clear = _write(), Operation(Kind.CLEAR, A)
    _run(history, write, Outcome.UNKNOWN)
    assert _verdict(history, write) == "undecided"
    _run(history, clear)
    assert _verdict(history, write, clear) == "erased"


def test_a_clear_after_the_acknowledgement_erases_and_one_overlapping_cannot_tell() -> (
    None
):
    history = History()
    write, clear = _write(), Operation(Kind.CLEAR, A)
    _run(history, write)
    _run(history, clear)
    assert _verdict(history, write, clear) == "erased"

    overlapping = History()
    writing = overlapping.invoke(write, 0)
    clearing = overlapping.invoke(clear, 1)
    overlapping.complete(writing, Outcome.OK)
    overlapping.complete(clearing, Outcome.OK)
    assert _verdict(overlapping, write, clear) == "undecided"


def test_a_replay_after_a_forget_or_a_clear_stays_out_but_after_a_retire_is_new() -> (
    None
):
    replay = Operation(Kind.REPLAY, A, target=M, event_id="e1", original=_write())
    for removal, result, verdict in (
        (Operation(Kind.FORGET, A, target=M), TURN_FORGOTTEN, "erased"),
        (Operation(Kind.FORGET, A, target=M), CLAIM_FORGOTTEN, "gone"),
        (Operation(Kind.CLEAR, A), None, "erased"),
        (Operation(Kind.RETIRE, A), None, "live"),
    ):
        history = History()
        write = _write()
        _run(history, write)
        _run(history, removal, result=result)
        _run(history, replay)
        assert _verdict(history, write, removal, replay) == verdict, removal.kind


def test_a_forget_overlapping_its_write_still_forgets() -> None:
    """A forget finds what it forgets by recalling it: the only possible order is the
    write first, whatever the overlap."""
    history = History()
    write, forget = _write(), Operation(Kind.FORGET, A, target=M)
    writing = history.invoke(write, 0)
    forgetting = history.invoke(forget, 1)
    history.complete(writing, Outcome.OK)
    history.complete(forgetting, Outcome.OK, result=TURN_FORGOTTEN)
    assert _verdict(history, write, forget) == "erased"


def test_archive_hides_and_unarchive_shows_again() -> None:
    history = History()
    write = _write(Kind.REMEMBER)
    archive = Operation(Kind.ARCHIVE, A, target=M)
    unarchive = Operation(Kind.UNARCHIVE, A, target=M)
    _run(history, write)
    _run(history, archive)
    assert _verdict(history, write, archive) == "gone"
    _run(history, unarchive)
    assert _verdict(history, write, archive, unarchive) == "live"


def test_directives_survive_a_clear_and_go_with_a_retire() -> None:
    history = History()
    directive = _write(Kind.DIRECTIVE)
    clear, retire = Operation(Kind.CLEAR, A), Operation(Kind.RETIRE, A)
    _run(history, directive)
    _run(history, clear)
    assert _verdict(history, directive, clear) == "live"
    _run(history, retire)
    assert _verdict(history, directive, clear, retire) == "erased"


def test_an_edit_withdraws_the_old_turn_without_erasing_it() -> None:
    history = History()
    write = _write()
    edit = Operation(Kind.EDIT, A, "qzzzzzzzzz", M, "e2", "s0", "new", "e1")
    _run(history, write)
    _run(history, edit)
    assert _verdict(history, write, edit) == "gone"


def test_a_replayed_edit_may_be_what_withdraws_the_turn_it_replaces() -> None:
    """The edit's first sending was refused (its turn was not there yet); sent again
    after the turn arrived, it withdraws it."""
    history = History()
    edit = Operation(Kind.EDIT, A, "qzzzzzzzzz", M, "e2", "s0", "new", "e1")
    write = _write()
    replay = Operation(
        Kind.REPLAY, A, target="qzzzzzzzzz", event_id="e2", original=edit
    )
    _run(history, edit, Outcome.FAIL)
    _run(history, write)
    _run(history, replay)
    assert _verdict(history, edit, write, replay) == "gone"


def test_an_import_of_a_backup_after_a_retire_brings_it_back() -> None:
    history = History()
    write, retire = _write(Kind.REMEMBER), Operation(Kind.RETIRE, A)
    restore = Operation(Kind.IMPORT, A)
    _run(history, write)
    _run(history, retire)
    _run(history, restore, result=Restored(frozenset({M}), frozenset({M})))
    assert _verdict(history, write, retire, restore) == "live"
    archived = History()
    _run(archived, write)
    _run(archived, retire)
    _run(archived, restore, result=Restored(frozenset(), frozenset({M})))
    assert _verdict(archived, write, retire, restore) == "gone"


def test_a_replayed_fork_turn_leaves_the_turn_it_forked_from_alone() -> None:
    history = History()
    write = _write()
    fork = Operation(
        Kind.FORK, A, "qzzzzzzzzz", M, "e2", "fork1", "new", original=write
    )
    delete = Operation(Kind.DELETE, A, None, M, "e3", "s0", replaces="e1")
    replay = Operation(
        Kind.REPLAY, A, target="qzzzzzzzzz", event_id="e2", original=fork
    )
    for call in (write, fork, delete, replay):
        _run(history, call)
    assert _verdict(history, write, fork, delete, replay) == "gone"


def test_a_clear_after_a_retire_leaves_a_later_replay_in() -> None:
    """The retire removed the turn (tombstones too); the clear has nothing of it to
    seal, so the same turn sent after the clear is a new write."""
    history = History()
    write, retire, clear = _write(), Operation(Kind.RETIRE, A), Operation(Kind.CLEAR, A)
    replay = Operation(Kind.REPLAY, A, target=M, event_id="e1", original=write)
    for call in (write, retire, clear, replay):
        _run(history, call)
    assert _verdict(history, write, retire, clear, replay) == "live"


def test_a_marker_is_held_only_where_its_tail_ends_a_word() -> None:
    """FTS5 keeps only a term's tail written out; another marker holding the same
    letters inside it (two seeded sources a draw apart) is not a copy."""
    assert holds_marker(b"\x10\tvvdpdrgb\x05", "qdvvdpdrgb")
    assert holds_marker(b"Codename qdvvdpdrgb.", "qdvvdpdrgb")
    assert not holds_marker(b"Codename qvvdpdrgbm.", "qdvvdpdrgb")
    assert not holds_marker(b"\x10\tvvdpdrgbm\x05", "qdvvdpdrgb")


# -- restatements and changes ------------------------------------------------------------
M2 = "qzzzzzzzzz"


def _said(
    kind: Kind, event: str, marker: str = M, *, attribute: str | None = None
) -> Operation:
    return Operation(
        kind, A, marker, None, event, "s0", f"I love {marker}.", attribute=attribute
    )


def _forgot_turn(event: str) -> Forgot:
    return Forgot(ForgetEffect.ERASED, "evidence", event, frozenset({event}))


def _forgot_claim(*sources: str) -> Forgot:
    return Forgot(ForgetEffect.HIDDEN, "preference", "c1", frozenset(sources))


def _expected(history: History, *operations: Operation) -> Any:
    return expectations(_workload(*operations), history)


def test_a_restatement_keeps_its_fact_recallable_when_the_first_turn_is_forgotten() -> (
    None
):
    history = History()
    first, again = _said(Kind.INGEST, "e1"), _said(Kind.RESTATE, "e2")
    forget = Operation(Kind.FORGET, A, target=M)
    _run(history, first)
    _run(history, again)
    _run(history, forget, result=_forgot_turn("e1"))
    assert _verdict(history, first, again, forget) == "live"
    # Its own turn forgotten too, nothing of the fact is left anywhere.
    _run(history, forget, result=_forgot_turn("e2"))
    assert _verdict(history, first, again, forget) == "erased"


def test_forgetting_the_claim_hides_every_turn_it_cites_and_may_hide_the_others() -> (
    None
):
    """After a merge the claim cites both turns: both leave recall. Recalled citing one
    only, the other may have been merged into it before the forget landed, or not."""
    first, again = _said(Kind.INGEST, "e1"), _said(Kind.RESTATE, "e2")
    forget = Operation(Kind.FORGET, A, target=M)
    merged = History()
    _run(merged, first)
    _run(merged, again)
    _run(merged, forget, result=_forgot_claim("e1", "e2"))
    assert _verdict(merged, first, again, forget) == "gone"
    unmerged = History()
    _run(unmerged, first)
    _run(unmerged, again)
    _run(unmerged, forget, result=_forgot_claim("e1"))
    assert _verdict(unmerged, first, again, forget) == "undecided"


def test_a_restatement_after_its_claim_was_forgotten_is_new_evidence() -> None:
    history = History()
    first, again = _said(Kind.INGEST, "e1"), _said(Kind.RESTATE, "e2")
    forget = Operation(Kind.FORGET, A, target=M)
    _run(history, first)
    _run(history, forget, result=_forgot_claim("e1"))
    _run(history, again)
    assert _verdict(history, first, forget, again) == "live"


def test_a_forget_recalling_a_turn_not_yet_stored_is_no_possible_order() -> None:
    """The forget found the restatement's turn by recalling it: the orders that put
    the forget before that turn's write are not what happened."""
    history = History()
    first, again = _said(Kind.INGEST, "e1"), _said(Kind.RESTATE, "e2")
    forget = Operation(Kind.FORGET, A, target=M)
    _run(history, first)
    writing = history.invoke(again, 1)
    forgetting = history.invoke(forget, 0)
    history.complete(writing, Outcome.OK)
    history.complete(forgetting, Outcome.OK, result=_forgot_turn("e2"))
    assert _verdict(history, first, again, forget) == "live"
    expected = _expected(history, first, again, forget)
    assert M not in expected.erased


def test_a_change_makes_the_value_before_it_history_until_it_goes() -> None:
    value = _said(Kind.INGEST, "e1", attribute=ATTRIBUTE)
    change = _said(Kind.CHANGE, "e2", M2, attribute=ATTRIBUTE)
    history = History()
    _run(history, value)
    _run(history, change)
    expected = _expected(history, value, change)
    assert expected.history == {A: {M: M2}}
    assert M in expected.live[A]
    # The newer value forgotten, the older one holds again.
    forget = Operation(Kind.FORGET, A, target=M2)
    _run(history, forget, result=_forgot_turn("e2"))
    assert _expected(history, value, change, forget).history == {}


def test_a_value_said_again_after_its_change_decides_nothing() -> None:
    """Said again after the change, the old value is current unless the restatement
    merged into its first statement before the change arrived (a merged value's time is
    its earliest turn's): neither is expected as history."""
    value = _said(Kind.INGEST, "e1", attribute=ATTRIBUTE)
    change = _said(Kind.CHANGE, "e2", M2, attribute=ATTRIBUTE)
    again = _said(Kind.RESTATE, "e3", attribute=ATTRIBUTE)
    history = History()
    for call in (value, change, again):
        _run(history, call)
    assert _expected(history, value, change, again).history == {}


def test_a_remembered_value_is_never_expected_as_history() -> None:
    """A remembered value's time is the memory's clock, not a turn's: whether a turn's
    value replaced it is not the turn's number to tell."""
    remembered = Operation(
        Kind.REMEMBER, A, M, text=f"My favourite colour is {M}.", attribute=ATTRIBUTE
    )
    change = _said(Kind.CHANGE, "e2", M2, attribute=ATTRIBUTE)
    history = History()
    _run(history, remembered)
    _run(history, change)
    assert _expected(history, remembered, change).history == {}
