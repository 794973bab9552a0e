"""The embedded API refuses every numeric argument outside its range (cairn.api.bounds)
with ArgumentOutOfRangeError before anything runs: the sentence names the argument, the
value and the range; nothing is recorded, drained or consumed; the values just inside each
range are served. The CLI's recall options reach the same check (exit 2, no traceback)."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.conftest import TEST_CONFIG, open_test_memory
from tests.helpers import turn
from typer.testing import CliRunner

from cairn import Memory, RecallStatus
from cairn.api import bounds
from cairn.cli.app import CliContext
from cairn.cli.main import app
from cairn.errors import (
    ArgumentOutOfRangeError,
    CairnError,
    DrainingError,
    InvalidInputError,
)
from cairn.providers.embedding import Vectors
from cairn.testing import FixedDomainClock, HashingEmbedder

DIMENSION = HashingEmbedder().dimension


async def _seeded(memory: Memory) -> None:
    await memory.ingest(
        "a",
        [
            turn("t1", "I love oolong tea."),
            turn("t2", "I live in Lisbon."),
            turn("t3", "My cat is called Miso."),
        ],
    )
    await memory.wait_idle("a")


# (keyword arguments of recall, the start of the sentence it must raise)
BAD_RECALLS: list[tuple[dict[str, Any], str]] = [
    ({"k": -1}, "k must be an integer from 1 to 100; got -1"),
    ({"k": 0}, "k must be an integer from 1 to 100; got 0"),
    ({"k": 101}, "k must be an integer from 1 to 100; got 101"),
    ({"k": True}, "k must be an integer from 1 to 100; got True"),
    ({"k": 2.0}, "k must be an integer from 1 to 100; got 2.0"),
    ({"k": 10**400}, "k must be an integer from 1 to 100; got an integer of 1329 bits"),
    (
        {"k": 10**5000},
        "k must be an integer from 1 to 100; got an integer of 16610 bits",
    ),
    (
        {"k": -(2**70)},
        "k must be an integer from 1 to 100; got -1180591620717411303424",
    ),
    ({"budget_bytes": -1}, "budget_bytes must be an integer from 1 to 1048576; got -1"),
    ({"budget_bytes": 0}, "budget_bytes must be an integer from 1 to 1048576; got 0"),
    ({"budget_bytes": 2**21}, "budget_bytes must be an integer from 1 to 1048576"),
    ({"wait_s": -1.0}, "wait_s must be a finite number of seconds from 0 up to 3600"),
    ({"wait_s": math.nan}, "wait_s must be a finite number of seconds from 0 up to"),
    ({"wait_s": math.inf}, "wait_s must be a finite number of seconds from 0 up to"),
    ({"wait_s": 10**400}, "wait_s must be a finite number of seconds from 0 up to"),
    ({"wait_s": 3601}, "wait_s must be a finite number of seconds from 0 up to 3600"),
    ({"query_vector": [0.5, 0.5]}, "query_vector must have 256 values"),
    ({"query_vector": []}, "query_vector must have 256 values"),
    ({"query_vector": [math.nan] * 256}, "query_vector values must be finite"),
    ({"query_vector": [1.0] * 255 + [math.inf]}, "query_vector values must be finite"),
    ({"query_vector": [1e39] * 256}, "query_vector values must be finite"),
    ({"query_vector": [0.0] * 256}, "query_vector must not be all zeros"),
    ({"query_vector": ["x"] * 256}, "query_vector must hold 256 numbers"),
    (
        {"as_of": dt.datetime.fromisoformat("9999-12-31T23:59:59-05:00")},
        (
            "as_of must be a time from 0001-01-01 to 9999-12-31 in UTC;"
            " got 9999-12-31T23:59:59-05:00"
        ),
    ),
    (
        {"as_of": dt.datetime.fromisoformat("0001-01-01T00:00:00+05:00")},
        "as_of must be a time from 0001-01-01 to 9999-12-31 in UTC",
    ),
]


@pytest.mark.parametrize(
    ("arguments", "sentence"),
    BAD_RECALLS,
    ids=[f"{next(iter(a))}-{i}" for i, (a, _) in enumerate(BAD_RECALLS)],
)
async def test_an_out_of_range_recall_argument_is_refused_before_anything_runs(
    memory: Memory, arguments: dict[str, Any], sentence: str
) -> None:
    await _seeded(memory)
    with pytest.raises(ArgumentOutOfRangeError) as caught:
        await memory.recall("a", "tea Lisbon Miso", session_id="s1", **arguments)
    assert str(caught.value).startswith(sentence), str(caught.value)
    assert len(str(caught.value)) < 200  # one readable line, even for 10**400
    # Nothing was recorded for the refused call.
    assert await memory.recalls("a") == []


async def test_a_query_vector_of_the_wrong_dimension_is_typed_not_a_group(
    memory: Memory,
) -> None:
    """It used to fail inside recall's nursery and arrive as an ExceptionGroup."""
    await _seeded(memory)
    with pytest.raises(
        ArgumentOutOfRangeError,
        match=r"must have 256 values \(the serving embedder's dimension\); got 3$",
    ):
        await memory.recall("a", "tea", query_vector=np.ones(3, dtype=np.float32))


class _WrongDimensionQueries(HashingEmbedder):
    """Documents embed as usual; a query comes back with 3 dimensions (a provider bug)."""

    async def embed_query(self, text: str) -> Vectors:
        del text
        return np.ones((1, 3), dtype=np.float32)


async def test_a_cairn_error_inside_recalls_tasks_reaches_the_caller_unwrapped(
    data_dir: Path, clock: FixedDomainClock
) -> None:
    """Recall's candidate reads run in a nursery: what fails there must arrive typed,
    never as an ExceptionGroup (which the IPC server could only answer ``internal``)."""
    async with open_test_memory(
        data_dir, clock=clock, embedder=_WrongDimensionQueries()
    ) as memory:
        await _seeded(memory)
        with pytest.raises(CairnError, match="expected a query of shape"):
            await memory.recall("a", "tea")


async def test_k_minus_one_and_k_zero_are_refused_not_guessed(memory: Memory) -> None:
    await _seeded(memory)
    everything = await memory.recall("a", "tea Lisbon Miso cat oolong")
    assert len(everything.items) >= 2
    for k in (-1, 0):
        with pytest.raises(ArgumentOutOfRangeError):
            await memory.recall("a", "tea Lisbon Miso cat oolong", k=k)
    assert len((await memory.recall("a", "tea Lisbon Miso cat oolong", k=1)).items) == 1


async def test_the_edges_of_each_recall_range_are_served(memory: Memory) -> None:
    await _seeded(memory)
    vector = np.zeros(DIMENSION, dtype=np.float32)
    vector[0] = 1.0
    for arguments in (
        {"k": 1, "budget_bytes": 1},
        {"k": bounds.MAX_RECALL_K, "budget_bytes": bounds.MAX_BUDGET_BYTES},
        {"wait_s": bounds.MAX_WAIT_S},
        {"query_vector": vector},
        {"query_vector": [1] + [0] * (DIMENSION - 1)},  # integers are numbers
        {"as_of": dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=dt.UTC)},
        {"as_of": dt.datetime.fromisoformat("0001-01-01T00:00:00-05:00")},
    ):
        recall = await memory.recall("a", "tea", **arguments)
        assert recall.status is RecallStatus.OK, arguments
    # 0 s answers at once with what is ready.
    at_once = await memory.recall("a", "tea", wait_s=0)
    assert at_once.status in {RecallStatus.PARTIAL, RecallStatus.PENDING}


@pytest.mark.parametrize("limit", [0, -1, 1001, True, 10**30])
async def test_a_list_limit_out_of_range_is_refused(memory: Memory, limit: Any) -> None:
    for listing in (memory.recalls, memory.attention, memory.entities):
        with pytest.raises(
            ArgumentOutOfRangeError, match=r"^limit must be an integer from 1 to 1000"
        ):
            await listing("a", limit=limit)
    assert await memory.recalls("a", limit=1000) == []


@pytest.mark.parametrize(
    ("item_ids", "sentence"),
    [
        ([0], "an attention item ID must be an integer from 1 to 9223372036854775807"),
        ([1, -5], "an attention item ID must be an integer from 1 to"),
        ([2**63], "an attention item ID must be an integer from 1 to"),
        ([1, "2"], "an attention item ID must be an integer from 1 to"),
        ([True], "an attention item ID must be an integer from 1 to"),
        (list(range(1, 1002)), "item_ids must hold at most 1000 IDs; got 1001"),
    ],
)
async def test_attention_item_ids_out_of_range_are_refused(
    memory: Memory, item_ids: list[Any], sentence: str
) -> None:
    with pytest.raises(ArgumentOutOfRangeError) as caught:
        await memory.consume_attention("a", item_ids)
    assert str(caught.value).startswith(sentence)
    assert await memory.consume_attention("a", [1, 2**63 - 1]) == 0


@pytest.mark.parametrize("timeout_s", [math.nan, -1.0, 0.0, math.inf, 86401.0])
async def test_a_drain_timeout_out_of_range_is_refused_and_drains_nothing(
    memory: Memory, timeout_s: float
) -> None:
    with pytest.raises(
        ArgumentOutOfRangeError,
        match=r"^timeout_s must be a finite number of seconds more than 0 and up to 86400",
    ):
        await memory.drain(timeout_s)
    # Writes are still accepted: the refused drain never started.
    await memory.ingest("a", [turn("t9", "I play the cello.")])
    report = await memory.drain(30.0)
    assert report.agents >= 1
    with pytest.raises(DrainingError):
        await memory.ingest("a", [turn("t10", "I play the viola.")])
    await memory.resume()


async def test_a_naive_as_of_stays_an_invalid_input(memory: Memory) -> None:
    with pytest.raises(InvalidInputError, match="timezone-aware"):
        await memory.recall("a", "tea", as_of=dt.datetime(2026, 1, 5, 9))  # noqa: DTZ001 - naive on purpose


INTEGER_CHECKS = [
    (bounds.check_k, 1, bounds.MAX_RECALL_K),
    (bounds.check_budget_bytes, 1, bounds.MAX_BUDGET_BYTES),
    (bounds.check_limit, 1, bounds.MAX_LIST_LIMIT),
]


@pytest.mark.parametrize(("check", "low", "high"), INTEGER_CHECKS)
@given(value=st.integers() | st.floats() | st.booleans() | st.text(max_size=3))
def test_an_integer_check_accepts_exactly_its_range(
    check: Any, low: int, high: int, value: object
) -> None:
    inside = (
        isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
    )
    if inside:
        assert check(value) == value
    else:
        with pytest.raises(ArgumentOutOfRangeError):
            check(value)


@pytest.mark.parametrize(
    ("check", "high", "zero"),
    [
        (bounds.check_wait_s, bounds.MAX_WAIT_S, True),
        (bounds.check_drain_timeout_s, bounds.MAX_DRAIN_TIMEOUT_S, False),
    ],
)
@given(value=st.floats() | st.integers() | st.booleans() | st.none())
def test_a_seconds_check_accepts_exactly_finite_seconds_in_its_range(
    check: Any, high: float, zero: bool, value: object
) -> None:
    inside = (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and (value >= 0 if zero else value > 0)
        and value <= high
    )
    if inside:
        assert check(value) == value
    else:
        with pytest.raises(ArgumentOutOfRangeError):
            check(value)


@pytest.mark.parametrize(
    ("options", "sentence"),
    [
        (["--k", "0"], "k must be an integer from 1 to 100; got 0"),
        (["--k", "-1"], "k must be an integer from 1 to 100; got -1"),
        (["--budget", "-1"], "budget_bytes must be an integer from 1 to 1048576"),
        (["--wait", "nan"], "wait_s must be a finite number of seconds"),
        (["--wait", "-1"], "wait_s must be a finite number of seconds"),
        (["--as-of", "9999-12-31T23:59:59-05:00"], "as_of must be a time from"),
    ],
)
def test_cli_recall_options_out_of_range_exit_2_with_the_sentence(
    tmp_path: Path, options: list[str], sentence: str
) -> None:
    context = CliContext(
        data_dir=tmp_path / "data",
        config=TEST_CONFIG,
        clock=FixedDomainClock(),
        embedder=HashingEmbedder,
    )
    result = CliRunner().invoke(
        app,
        ["recall", "--agent", "a", *options, "tea"],
        obj=context,
        catch_exceptions=False,
    )
    assert result.exit_code == 2, result.stdout + result.stderr
    assert result.stderr.startswith(f"cairn: {sentence}"), result.stderr
    assert "Traceback" not in result.stderr
