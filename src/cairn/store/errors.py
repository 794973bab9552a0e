"""SQLite's errors, translated once into cairn's (the ``StoreError`` family).

apsw raises one exception class per SQLite result code, and gives the extended code as
``extendedresult``; the table below maps them. The only ``RAISE`` in the schema is the
clear fence's (migrations 0001 and 0003; ``tests/store/test_errors.py`` keeps it so), so a
trigger's refusal (``SQLITE_CONSTRAINT_TRIGGER``) is always :class:`ClearPendingError`.
Nothing in cairn reads an error's message to decide what it means.

:class:`cairn.runtime.database.Database` translates every transaction it runs; code that
holds a raw connection (tests, a crash harness) still sees apsw's own exceptions.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Final

import apsw

from cairn.errors import (
    ClearPendingError,
    StorageCorruptError,
    StorageFullError,
    StorageIOError,
    StoreConstraintError,
    StoreError,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["store_error", "translated"]

# Extended result codes that name the failure more precisely than their class.
_BY_EXTENDED_CODE: Final[dict[int, type[StoreError]]] = {
    apsw.SQLITE_CONSTRAINT_TRIGGER: ClearPendingError,
}
# Otherwise the first class the error is an instance of; anything else is StoreError.
_BY_CLASS: Final[tuple[tuple[type[apsw.Error], type[StoreError]], ...]] = (
    (apsw.ConstraintError, StoreConstraintError),
    (apsw.FullError, StorageFullError),
    (apsw.IOError, StorageIOError),
    (apsw.CorruptError, StorageCorruptError),
    (apsw.NotADBError, StorageCorruptError),
)

_CLEAR_PENDING = "a clear job is pending for the agent: claim writes are refused"


def _origin(error: apsw.Error) -> apsw.Error:
    """The first SQLite error of a chain.

    On ``SQLITE_FULL`` or an I/O error SQLite may roll the whole transaction back itself;
    the connection's context manager then fails to roll back its savepoint and raises an
    ``SQLError`` whose context is the error that caused it all.
    """
    while isinstance(error.__context__, apsw.Error):
        error = error.__context__
    return error


def store_error(error: apsw.Error) -> StoreError:
    """The cairn error for ``error`` (chain it: ``raise store_error(e) from e``)."""
    origin = _origin(error)
    kind = _BY_EXTENDED_CODE.get(getattr(origin, "extendedresult", None) or -1)
    if kind is None:
        kind = next(
            (mapped for raised, mapped in _BY_CLASS if isinstance(origin, raised)),
            StoreError,
        )
    if kind is ClearPendingError:
        return ClearPendingError(_CLEAR_PENDING)
    return kind(f"{type(origin).__name__}: {origin}")


@contextlib.contextmanager
def translated() -> Iterator[None]:
    """Raise the cairn error for any apsw error raised inside the block."""
    try:
        yield
    except apsw.Error as error:
        raise store_error(error) from error
