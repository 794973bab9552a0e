"""The trio-asyncio bridge: one asyncio loop per trio run, opened on first use, closed at
shutdown; trio cancellation reaches the asyncio task; the executor accepts functions that
return coroutines (LiteLLM's pattern) and never leaves one unawaited.

Everything is bounded by ``trio.fail_after``; waits are events, never sleeps. These tests
import trio-asyncio into the test process, which changes what a later ``asyncio.run``
builds (design/providers.md); the guest-mode test builds its host loop explicitly.
"""

from __future__ import annotations

import asyncio  # noqa: TID251 - asyncio coroutines are what the bridge runs
import inspect
import threading
from collections.abc import Coroutine
from typing import Any

import pytest
import trio
import trio.testing

from cairn.errors import RuntimeClosedError
from cairn.providers.asyncio_bridge import (
    close_asyncio_loop,
    host_asyncio_loop_running,
    run_asyncio,
)

BOUND_S = 10.0


async def _running_loop() -> asyncio.AbstractEventLoop:
    await asyncio.sleep(0)
    return asyncio.get_running_loop()


async def test_one_loop_serves_every_call_of_the_run() -> None:
    with trio.fail_after(BOUND_S):
        first = await run_asyncio(_running_loop)
        async with trio.open_nursery() as nursery:
            seen: list[asyncio.AbstractEventLoop] = []

            async def call() -> None:
                seen.append(await run_asyncio(_running_loop))

            for _ in range(3):
                nursery.start_soon(call)
    assert seen == [first, first, first]
    assert type(first).__name__ == "TrioEventLoop"


async def test_asyncio_errors_come_back_unchanged() -> None:
    async def fail(message: str) -> None:
        await asyncio.sleep(0)
        raise LookupError(message)

    with trio.fail_after(BOUND_S), pytest.raises(LookupError, match="nope"):
        await run_asyncio(fail, message="nope")


async def test_trio_cancellation_cancels_the_asyncio_task() -> None:
    started = trio.Event()
    outcome: list[str] = []

    async def wait_forever() -> None:
        trio_token.run_sync_soon(started.set)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            outcome.append("asyncio task cancelled")
            raise

    trio_token = trio.lowlevel.current_trio_token()
    with trio.fail_after(BOUND_S):
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(run_asyncio, wait_forever)
                await started.wait()
                scope.cancel()
        assert scope.cancelled_caught
        assert outcome == ["asyncio task cancelled"]
        # The loop outlives a cancelled call.
        assert await run_asyncio(_running_loop) is not None


async def test_close_ends_calls_in_flight_and_the_next_call_reopens() -> None:
    started = trio.Event()

    async def wait_forever() -> None:
        trio_token.run_sync_soon(started.set)
        await asyncio.Event().wait()

    trio_token = trio.lowlevel.current_trio_token()
    with trio.fail_after(BOUND_S):
        before = await run_asyncio(_running_loop)
        failures: list[BaseException] = []

        async def call() -> None:
            try:
                await run_asyncio(wait_forever)
            except RuntimeClosedError as error:
                failures.append(error)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(call)
            await started.wait()
            await close_asyncio_loop()
        assert [type(error) for error in failures] == [RuntimeClosedError]
        assert before.is_closed()
        after = await run_asyncio(_running_loop)
        await close_asyncio_loop()
        await close_asyncio_loop()  # idempotent
    assert after is not before
    assert after.is_closed()


def test_the_loop_closes_when_the_run_ends() -> None:
    loops: list[asyncio.AbstractEventLoop] = []

    async def main() -> None:
        with trio.fail_after(BOUND_S):
            loops.append(await run_asyncio(_running_loop))

    trio.run(main)
    trio.run(main)
    assert len(loops) == 2
    assert loops[0] is not loops[1]  # one loop per run
    assert all(loop.is_closed() for loop in loops)


async def test_executor_hands_back_a_coroutine_returned_by_the_thread() -> None:
    # LiteLLM's acompletion: build the request in a thread, await what the thread returns.
    async def answer() -> str:
        await asyncio.sleep(0)
        return "answered"

    def build() -> Coroutine[Any, Any, str]:
        return answer()

    async def acompletion() -> str:
        made = await asyncio.get_running_loop().run_in_executor(None, build)
        assert inspect.iscoroutine(made)
        return await made

    with trio.fail_after(BOUND_S):
        assert await run_asyncio(acompletion) == "answered"


async def test_a_cancel_while_the_thread_runs_still_cancels_the_call() -> None:
    in_thread = trio.Event()
    proceed = threading.Event()
    built: list[Coroutine[Any, Any, None]] = []
    reached: list[str] = []

    async def never_awaited() -> None:
        await asyncio.sleep(0)

    def build() -> Coroutine[Any, Any, None]:
        trio.from_thread.run_sync(in_thread.set)
        proceed.wait()
        built.append(never_awaited())
        return built[-1]

    async def acompletion() -> None:
        await (await asyncio.get_running_loop().run_in_executor(None, build))
        reached.append("the coroutine built in the thread was awaited")

    with trio.fail_after(BOUND_S):
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(run_asyncio, acompletion)
                await in_thread.wait()
                scope.cancel()
                proceed.set()  # the thread finishes after the cancel
        assert scope.cancelled_caught
    assert reached == []  # the asyncio task did not go on to send the request
    # Closed by the executor: no "coroutine was never awaited" warning (an error here).
    assert len(built) == 1
    assert inspect.getcoroutinestate(built[0]) == inspect.CORO_CLOSED


async def test_no_host_loop_inside_a_plain_trio_run() -> None:
    await run_asyncio(_running_loop)
    assert not host_asyncio_loop_running()


def test_a_host_asyncio_loop_is_detected_from_a_guest_run() -> None:
    async def trio_main() -> bool:
        return host_asyncio_loop_running()

    async def host() -> bool:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Any] = loop.create_future()
        trio.lowlevel.start_guest_run(
            trio_main,
            run_sync_soon_threadsafe=loop.call_soon_threadsafe,
            done_callback=done.set_result,
            host_uses_signal_set_wakeup_fd=True,
        )
        return bool((await asyncio.wait_for(done, BOUND_S)).unwrap())

    # A real selector loop: once trio-asyncio is imported, asyncio.run() would build a
    # trio-asyncio loop instead (which cannot host a guest run).
    with asyncio.Runner(loop_factory=asyncio.SelectorEventLoop) as runner:
        assert runner.run(host()) is True
