"""Commands that only read: the runtime when it opens, else the stored rows.

``status``, ``doctor``, ``export`` (and any command that only lists what is stored) must
answer even when no runtime can open here:

- the data directory cannot be written (ReadOnlyDataDirectoryError): no process may
  migrate, repair or write it;
- the configured HTTP embedder is down and its dimension is not configured
  (EmbedderUnavailableError): the runtime cannot know its embedding identity.

:func:`open_live_or_stored` tries the command's usual way in (``open_target`` or
``CliContext.open``); when that is refused for one of these reasons it opens the stored
rows read-only instead (cairn.cli.read_only) and says why in :attr:`Stored.degraded`,
one sentence per reason, which the command prints (``degraded`` in its JSON). Only the
opening is guarded: an error raised by the command's own work propagates as it is.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, TypeVar

import attrs

from cairn.cli.read_only import StoredData, open_stored
from cairn.errors import CairnError, ReadOnlyDataDirectoryError
from cairn.runtime.providers import EmbedderUnavailableError

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from contextlib import AbstractAsyncContextManager

    from cairn.cli.app import CliContext

__all__ = ["Stored", "degraded_of", "open_live_or_stored"]

T = TypeVar("T")


@attrs.frozen
class Stored:
    """The stored rows, read because the usual opener was refused.

    ``refusal`` is the error that refused it (a command that must write raises it),
    ``degraded`` says in a sentence why the stored rows are read instead, and
    ``embedder_error`` is the embedder's failure when that is the reason.
    """

    data: StoredData
    refusal: CairnError
    degraded: tuple[str, ...]
    embedder_error: str | None = None


def degraded_of(opened: object) -> list[str]:
    """What ``opened`` could not do: ``degraded`` in a command's JSON ([] when live)."""
    return list(opened.degraded) if isinstance(opened, Stored) else []


@contextlib.asynccontextmanager
async def open_live_or_stored(
    cli: CliContext, open_live: Callable[[], AbstractAsyncContextManager[T]]
) -> AsyncIterator[T | Stored]:
    """What ``open_live()`` opens, or the :class:`Stored` rows when it is refused for a
    reason in the module's list; any other refusal (the directory in use, bad
    configuration) is raised as it is."""
    async with contextlib.AsyncExitStack() as stack:
        embedder_error: str | None = None
        try:
            live = await stack.enter_async_context(open_live())
        except ReadOnlyDataDirectoryError as error:
            refusal: CairnError = error
            reason = str(error)
        except EmbedderUnavailableError as error:
            refusal = error
            reason = f"{error}: only what is stored was read"
            embedder_error = str(error.__cause__ or error)
        else:
            yield live
            return
        data = await stack.enter_async_context(open_stored(cli))
        yield Stored(data, refusal, (reason,), embedder_error)
