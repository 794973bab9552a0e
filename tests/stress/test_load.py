"""The socket load test: 16 clients on a real ``cairn serve --socket`` for 8 + 10 seconds with
malformed frames, a connection flood past the cap and a client that never reads beside
them: no hang, no cross-agent read, RSS and descriptors flat after warm-up, typed
refusals, a bounded non-reader. And the checks behind it find what they look for."""

from __future__ import annotations

import logging
import random
from pathlib import Path

import pytest
import trio
import trio.testing

from cairn import Memory
from cairn.ipc.framing import encode_frame
from cairn.ipc.messages import PROTOCOL_VERSION, Hello, PingRequest
from cairn.ipc.server import ServerLimits, serve_stream
from cairn.stress.load import RSS_GROWTH_SLACK_KIB, check_flat, run_load
from cairn.stress.load_clients import MODE, OPERATIONS, Ledger
from cairn.stress.load_probes import OVER_CAP_ATTEMPTS, PROBES
from cairn.stress.load_server import Sample
from cairn.stress.markers import MarkerSource
from cairn.stress.profiles import PROFILES
from cairn.stress.report import ModeResult


@pytest.mark.subprocess
async def test_sixteen_clients_for_ten_seconds_stay_isolated_answered_and_bounded(
    tmp_path: Path,
) -> None:
    # The ci profile's load mode itself (tests/stress/test_ci_profile.py runs the other
    # modes), with the figures behind a passing run checked too.
    profile = PROFILES["ci"]
    assert (profile.load_clients, profile.load_seconds) == (16, 10.0)
    with trio.fail_after(120):
        result = await run_load(tmp_path / "load", 13, profile)
    figures = result.figures
    report = "\n".join(
        f"{v.invariant} {v.message}\n  " + "\n  ".join(v.history)
        for v in result.violations
    )
    assert result.violations == [], report
    # Every operation of the mix ran, many times, each answered within its budget.
    assert figures["calls"] == result.operations >= 300
    # The marker scan saw markers, and calls that asked for another agent's memories.
    assert figures["markers_seen"] >= figures["calls.recall"]
    assert figures["cross_agent_recalls"] >= 5
    assert figures["cross_agent_fetches"] >= 5
    assert figures["exports_checked"] == figures["agents"]
    for operation in OPERATIONS:
        assert figures[f"calls.{operation}"] >= 10, operation
    answered = sum(v for k, v in figures.items() if k.startswith("answers."))
    assert answered == figures["calls"]
    assert "answers.timeout" not in figures
    assert "answers.error" not in figures
    assert figures["answers.pending"] + figures.get("answers.partial", 0) > 0
    # Every kind of malformed frame, several times, each answered as the protocol says.
    assert figures["probes"] == figures["probes_answered"] >= 2 * (len(PROBES) + 1)
    # Bursts past the in-flight bound: one answer each, the extra ones busy.
    assert figures["burst_answers.busy"] >= 1
    assert figures["burst_answers.pingresult"] >= 1
    # A connection that never said hello was closed after the handshake timeout.
    assert figures["silent_connections_closed"] == 1
    # The connection cap: filled, and every connection past it refused with the type.
    assert figures["cap_connections_held"] >= 1
    assert figures["refusals"] == OVER_CAP_ATTEMPTS
    # The client that never reads was dropped once, the server barely grew meanwhile.
    assert figures["non_reader_drops_logged"] == 1
    assert figures["non_reader_rss_growth_kib"] < 64 * 1024
    # RSS and descriptors after warm-up: the late median within its bound, and the
    # server's descriptors back to what it held before the clients came.
    assert figures["samples"] >= profile.load_seconds / 2
    assert figures["rss_kib.late_median"] <= figures["rss_kib.late_bound"]
    assert figures["fds.late_median"] <= figures["fds.middle_median"] + 8
    assert figures["fds.after_clients"] <= figures["fds.baseline"] + 8
    assert figures["fds.max"] >= figures["clients"]  # the sampler saw the connections


def _ledger() -> Ledger:
    return Ledger(7, ModeResult(MODE))


def test_a_marker_of_another_agent_in_an_answer_is_a_cross_agent_read() -> None:
    ledger = _ledger()
    markers = MarkerSource(random.Random(1))
    mine, theirs = markers(), markers()
    ledger.owner.update({mine: "a", theirs: "b"})
    ledger.written[theirs] = "ingest b +" + theirs
    ledger.check_markers("a", f"My locker code word is {mine}.", "recall a")
    ledger.check_markers("b", f"My locker code word is {theirs}.", "recall b")
    assert ledger.result.violations == []

    ledger.check_markers("a", f"I named my bicycle {theirs}.", "     9 c1.0 recall a")
    ledger.check_markers(None, f"failure: {mine}", "status")  # status is no agent's
    found = ledger.result.violations
    assert [v.invariant for v in found] == ["I3", "I3"]
    assert theirs in found[0].message
    assert found[0].history == (f"ingest b +{theirs}", "     9 c1.0 recall a")
    assert mine in found[1].message


def _samples(rss_kib: list[int], fds: list[int], writes: list[int]) -> list[Sample]:
    return [
        Sample(float(n), r, f, w)
        for n, (r, f, w) in enumerate(zip(rss_kib, fds, writes, strict=True))
    ]


def test_memory_that_grows_with_the_calls_after_warm_up_is_reported() -> None:
    calls = list(range(0, 90_000, 10_000))
    # Growth with the data stored is allowed (8 KiB a write) ...
    stored = _samples([80_000 + c * 8 for c in calls], [30] * 9, calls)
    ledger = _ledger()
    check_flat(stored, ledger)
    assert ledger.result.violations == []
    # ... growth of 20 KiB a call with no write behind it is a leak.
    leaking = _samples([80_000 + c * 20 for c in calls], [30] * 9, [0] * 9)
    ledger = _ledger()
    check_flat(leaking, ledger)
    (violation,) = ledger.result.violations
    assert violation.invariant == "I8"
    assert "RSS grew after warm-up" in violation.message
    # A warm-up spike alone is not growth.
    spike = _samples(
        [80_000 + 4 * RSS_GROWTH_SLACK_KIB] + [80_000] * 8, [30] * 9, [0] * 9
    )
    ledger = _ledger()
    check_flat(spike, ledger)
    assert ledger.result.violations == []


def test_descriptors_that_pile_up_after_warm_up_are_reported() -> None:
    ledger = _ledger()
    check_flat(_samples([80_000] * 9, [30 + 5 * n for n in range(9)], [0] * 9), ledger)
    (violation,) = ledger.result.violations
    assert "descriptors grew after warm-up" in violation.message


async def test_the_drop_of_a_client_that_never_reads_is_logged_once(
    memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    """The server reads a batch of requests at once; when the client's answers overrun
    the queue, every later answer of that batch used to log the overrun again."""
    server_side, client_side = trio.testing.lockstep_stream_pair()
    limits = ServerLimits(max_in_flight=1, outbound_slack=1)
    frames = encode_frame(Hello(versions=[PROTOCOL_VERSION], client="never reads"))
    frames += b"".join(encode_frame(PingRequest(id=n)) for n in range(1, 51))
    caplog.set_level(logging.WARNING, logger="cairn.ipc.server")
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client_side.send_all, frames)
            await serve_stream(server_side, memory, limits, label="never reads")
            nursery.cancel_scope.cancel()
    overruns = [r for r in caplog.records if "does not read its answers" in r.message]
    assert len(overruns) == 1
