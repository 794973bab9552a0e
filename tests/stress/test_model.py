"""The history checker's verdicts (cairn.stress.model): what a history of concurrent,
crashed and refused calls says must be recallable, must never be, or cannot be told."""

from __future__ import annotations

from cairn.stress.history import Call, History, Outcome
from cairn.stress.markers import holds_marker
from cairn.stress.model import ForgetEffect, Restored, expectations
from cairn.stress.workload import Kind, Operation, Phase, Workload

A = "agent-0"
M = "qbcdfghjkl"


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
        (Operation(Kind.FORGET, A, target=M), ForgetEffect.ERASED, "erased"),
        (Operation(Kind.FORGET, A, target=M), ForgetEffect.HIDDEN, "gone"),
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
    history.complete(forgetting, Outcome.OK, result=ForgetEffect.ERASED)
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
