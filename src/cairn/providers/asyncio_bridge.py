"""asyncio-only client libraries called from trio: one trio-asyncio loop per trio run.

cairn runs on trio; a provider built on an asyncio-only library (LiteLLM's ``acompletion``,
:mod:`cairn.providers.litellm_text`) awaits its coroutines through :func:`run_asyncio`,
which runs them as asyncio tasks on a trio-asyncio event loop living inside the same trio
run. Nothing here is imported by cairn unless such a provider is configured: importing
``trio_asyncio`` changes asyncio process-wide (its event loop policy and ``asyncio.run``
now build trio-asyncio loops), so it stays behind the optional ``cairn[litellm]`` extra and
is imported on first use, in a worker thread.

The loop:

* **One per trio run, opened lazily.** The first call starts a trio *system task* that
  enters ``trio_asyncio.open_loop()`` and keeps it open; later calls, from any task or
  provider of the same run, reuse it. A system task, because no caller's nursery outlives
  its call, and providers get no nursery from the runtime.
* **Closed at shutdown.** When the run's main task exits, trio cancels its system tasks and
  ``open_loop`` shuts the loop down like ``asyncio.run`` does (every asyncio task cancelled
  and awaited). :func:`close_asyncio_loop` closes it earlier: calls in flight end with
  :class:`~cairn.errors.RuntimeClosedError`, and the next call opens a fresh loop.
* **Cancellation crosses over.** Cancelling the trio caller cancels its asyncio task
  (trio-asyncio's ``run_aio_coroutine``), so a hung request is abandoned at once and its
  connection closed (``test_hung_call_is_cancelled_and_its_connection_closed``).
* **Executor.** ``loop.run_in_executor(None, f)`` runs ``f`` in a trio worker thread
  under this bridge's limiter. trio-asyncio's own executor rejects a function that returns
  a coroutine (trio's ``to_thread.run_sync`` refuses them), but LiteLLM's ``acompletion``
  does exactly that: it builds the request in a thread and awaits the coroutine the thread
  returns. This executor hands such a coroutine back (and closes it if the call was
  cancelled, so it is never left unawaited). It also delivers a cancel that arrived while
  the thread ran: trio-asyncio forwards an asyncio cancel of an executor future to the trio
  task behind it and resolves the future with that task's outcome, so a task that finished
  anyway would resume the cancelled asyncio caller as if no cancel had happened
  (``test_a_cancel_while_the_thread_runs_still_cancels_the_call``).

Not under an asyncio host: when cairn is a trio guest on an asyncio loop
(:mod:`cairn.hosts.asyncio_host`), that loop is the thread's running loop at the C level,
so asyncio futures created without an explicit loop inside the trio-asyncio loop bind to the
host's loop instead. :func:`host_asyncio_loop_running` detects it and callers refuse
(trio-asyncio's own ``open_loop`` leaves it as a TODO).
"""

from __future__ import annotations

import importlib
import inspect
import logging
import sys
from typing import TYPE_CHECKING, Any, Final, TypeVar

import attrs
import trio

from cairn.errors import RuntimeClosedError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = [
    "EXECUTOR_THREADS",
    "close_asyncio_loop",
    "host_asyncio_loop_running",
    "run_asyncio",
]

T = TypeVar("T")

logger = logging.getLogger(__name__)

# Worker threads the loop's default executor may keep busy at once (LiteLLM builds each
# request in one; the provider's own limiter bounds calls in flight).
EXECUTOR_THREADS: Final = 4


def host_asyncio_loop_running() -> bool:
    """Whether a real asyncio loop is running this thread (cairn is a trio guest on it).

    Asks CPython's C-level running-loop slot, which trio-asyncio does not patch: inside
    trio (trio-asyncio loop or not) it is empty unless a host loop is driving the run.
    Imports nothing: with asyncio not imported yet no loop can be running, and importing
    ``_asyncio`` before ``asyncio`` would leave asyncio with two task registries (its
    circular import falls back to the pure-Python one), so ``asyncio.current_task()``
    would find no task and ``asyncio.timeout`` would fail
    (``test_no_network_but_the_endpoint_at_import_or_call`` runs in a fresh process).
    """
    if "asyncio" not in sys.modules:
        return False
    c_asyncio = sys.modules.get("_asyncio")
    if c_asyncio is None:  # pragma: no cover - not CPython
        return False
    # The C accelerator's own slot: asyncio.events._get_running_loop is patched by
    # trio-asyncio and answers for trio-asyncio loops only.
    return c_asyncio._get_running_loop() is not None  # noqa: SLF001


def _import_trio_asyncio() -> Any:
    return importlib.import_module("trio_asyncio")


async def _load_trio_asyncio() -> Any:
    # The import takes ~0.1 s (it patches asyncio's policy functions), so it runs off the
    # trio thread. Providers cannot reach cairn.runtime.threads (layering), and an import
    # needs no named limiter.
    return await trio.to_thread.run_sync(_import_trio_asyncio)  # noqa: TID251


def _executor_type(trio_asyncio: Any) -> type[Any]:
    class CoroutineReturningExecutor(trio_asyncio.TrioExecutor):  # type: ignore[misc]
        """trio-asyncio's executor, except that ``func`` may return a coroutine."""

        async def submit(self, func: Callable[..., object], *args: object) -> object:
            box: list[object] = []

            def call() -> None:
                box.append(func(*args))

            try:
                # Under the bridge's own limiter (providers cannot reach runtime.threads).
                await trio.to_thread.run_sync(call, limiter=self._limiter)  # noqa: TID251
                # A thread cannot be interrupted, so a cancel that arrived meanwhile is
                # still pending: deliver it now. Returning a value instead would resolve
                # the future and trio-asyncio would resume the cancelled asyncio task as
                # if nothing had happened (it forwards a future's cancel to its trio task
                # and waits for that task's outcome).
                await trio.lowlevel.checkpoint()
            except BaseException:
                for value in box:
                    if inspect.iscoroutine(value):
                        value.close()  # cancelled after the thread finished
                raise
            return box[0]

    return CoroutineReturningExecutor


@attrs.define(eq=False)
class _Bridge:
    """The asyncio loop of one trio run and the calls going through it."""

    limiter: trio.CapacityLimiter = attrs.Factory(
        lambda: trio.CapacityLimiter(EXECUTOR_THREADS)
    )
    loop: Any = None
    started: bool = False
    closing: bool = False
    ready: trio.Event = attrs.Factory(trio.Event)
    stop: trio.Event = attrs.Factory(trio.Event)
    stopped: trio.Event = attrs.Factory(trio.Event)
    calls: set[trio.CancelScope] = attrs.Factory(set)
    trio_asyncio: Any = None

    async def open(self) -> Any:
        if not self.started and not self.closing:
            # Concurrent first callers may each ask; the import itself happens once.
            self._start(await _load_trio_asyncio())
        if self.closing:
            raise RuntimeClosedError("the asyncio loop is closing")
        await self.ready.wait()
        if self.loop is None or self.closing:
            raise RuntimeClosedError("the asyncio loop is closed")
        return self.loop

    def _start(self, trio_asyncio: Any) -> None:
        if self.started or self.closing:
            return
        self.started = True
        self.trio_asyncio = trio_asyncio
        trio.lowlevel.spawn_system_task(self._host, name="cairn asyncio loop")

    async def _host(self) -> None:
        # A system task must not raise (trio would crash the run): failures are logged and
        # every waiter is woken to find no loop.
        try:
            async with self.trio_asyncio.open_loop() as loop:
                loop.set_default_executor(
                    _executor_type(self.trio_asyncio)(limiter=self.limiter)
                )
                self.loop = loop
                self.ready.set()
                await self.stop.wait()
        except Exception:
            logger.exception("the asyncio loop failed")
        finally:
            self.loop = None
            self.ready.set()
            self.stopped.set()

    async def call(self, function: Callable[..., Awaitable[T]], kwargs: Any) -> T:
        loop = await self.open()
        with trio.CancelScope() as scope:
            self.calls.add(scope)
            try:
                result: T = await self.trio_asyncio.aio_as_trio(function, loop=loop)(
                    **kwargs
                )
                return result
            finally:
                self.calls.discard(scope)
        raise RuntimeClosedError("the asyncio loop closed during the call")

    async def close(self) -> None:
        self.closing = True
        for scope in list(self.calls):
            scope.cancel(reason="asyncio loop closing")
        self.stop.set()
        if self.started:
            await self.stopped.wait()
        else:
            await trio.lowlevel.checkpoint()


_BRIDGE: Final[trio.lowlevel.RunVar[_Bridge]] = trio.lowlevel.RunVar(
    "cairn_asyncio_bridge"
)


def _bridge() -> _Bridge:
    try:
        return _BRIDGE.get()
    except LookupError:
        bridge = _Bridge()
        _BRIDGE.set(bridge)
        return bridge


async def run_asyncio(function: Callable[..., Awaitable[T]], /, **kwargs: Any) -> T:
    """``await function(**kwargs)`` as an asyncio task on this trio run's asyncio loop.

    Opens the loop on first use. Cancelling the caller cancels the asyncio task; a call cut
    off by :func:`close_asyncio_loop` raises :class:`~cairn.errors.RuntimeClosedError`.
    Whatever ``function`` raises is raised unchanged.
    """
    return await _bridge().call(function, kwargs)


async def close_asyncio_loop() -> None:
    """Close this run's asyncio loop now (idempotent; the run's end closes it anyway).

    Calls in flight are cancelled and raise :class:`~cairn.errors.RuntimeClosedError`;
    the next :func:`run_asyncio` opens a new loop.
    """
    bridge = _bridge()
    _BRIDGE.set(_Bridge())
    await bridge.close()
