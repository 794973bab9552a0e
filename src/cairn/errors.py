"""Errors raised by cairn.

Every error derives from :class:`CairnError` and, where a generic handler would reasonably
catch it, from the closest builtin as well. SQLite's errors reach callers only as the
``StoreError`` subclasses below, translated once where they arise
(:mod:`cairn.store.errors`)::

    CairnError
    ├── InvalidInputError (ValueError)        bad caller input; nothing was written
    │   ├── InvalidScopeError
    │   ├── InvalidTemporalError
    │   ├── InvalidMetadataError              caller metadata of the wrong shape or too big
    │   ├── ConflictingEventError             same event ID, different content
    │   ├── MessageTooLargeError              a turn over the per-message segment cap
    │   ├── SecretInIdentifierError           an event/session/request ID holding a secret
    │   ├── InvalidIdentifierError            an ID blank, too long or not printable
    │   ├── ProtectedClaimError               persona/working rows have their own lifecycle
    │   ├── InvalidTransitionError            e.g. approving a directive that is not a draft
    │   ├── ArgumentOutOfRangeError           a number outside its documented range
    │   └── ConfigurationError                cairn.toml or a CAIRN_* variable is invalid
    ├── UnknownRequestError (KeyError)        no recall request with that ID
    ├── UnknownClaimError (KeyError)          no claim with that ID in the agent
    │   └── UnknownMemoryError                neither a claim nor a stored turn (forget)
    ├── UnknownDirectiveError (KeyError)      no directive with that ID in the agent
    ├── UnknownConflictError (KeyError)       no conflict with that ID in the agent
    ├── StoreError                            the database refused or is damaged
    │   ├── SchemaVersionError                file written by a newer cairn
    │   ├── ClearPendingError                 writes refused while a clear job runs
    │   ├── StoreConstraintError              a write broke a schema constraint
    │   ├── StorageFullError                  the disk or the file's size limit is full
    │   ├── StorageIOError                    the OS failed a read or write of the file
    │   ├── StorageCorruptError               the file is damaged or not a database
    │   └── PipelineStalledError              background extraction/embedding cannot commit
    ├── StaleResultError                      execution identity no longer current (fence)
    │   └── StaleLeaseError                   a batch lease was taken over or settled
    ├── ProposalRejectedError                 an extraction proposal failed validation
    ├── ProviderError
    │   ├── TransientProviderError            worth retrying
    │   └── ProviderContractError             the provider answered something unusable
    ├── VectorIndexError
    │   ├── VectorIndexCorruptError           file unreadable: quarantined, recall degrades
    │   └── VectorIdentityMismatchError       file built by another embedding identity
    ├── RuntimeClosedError (RuntimeError)     the memory runtime is stopped or stopping
    │   └── DrainingError                     writes refused while drained (until resume)
    ├── AgentUnavailableError (RuntimeError)  the agent failed; a later call retries it
    ├── DrainTimeoutError (TimeoutError)      accepted work did not settle in time
    ├── DataDirectoryInUseError               another process holds the data directory
    ├── ReadOnlyDataDirectoryError            the data directory cannot be written
    ├── SocketInUseError                      a live server listens on that socket path
    ├── IngestStoppedError                    a file ingest stopped partway on a storage fault
    └── IpcError                              the IPC conversation failed
        ├── ProtocolError                     a malformed, oversize or unexpected frame
        │   └── ProtocolVersionError          no protocol version in common
        ├── ServerBusyError                   too many requests in flight on the connection
        ├── TooManyConnectionsError (ConnectionRefusedError)  the server is at its cap
        └── ConnectionLostError (ConnectionError)  the peer closed the connection
"""

from __future__ import annotations

__all__ = [
    "AgentUnavailableError",
    "ArgumentOutOfRangeError",
    "CairnError",
    "ClearPendingError",
    "ConfigurationError",
    "ConflictingEventError",
    "ConnectionLostError",
    "DataDirectoryInUseError",
    "DrainTimeoutError",
    "DrainingError",
    "IngestStoppedError",
    "InvalidIdentifierError",
    "InvalidInputError",
    "InvalidMetadataError",
    "InvalidScopeError",
    "InvalidTemporalError",
    "InvalidTransitionError",
    "IpcError",
    "MessageTooLargeError",
    "PipelineStalledError",
    "ProposalRejectedError",
    "ProtectedClaimError",
    "ProtocolError",
    "ProtocolVersionError",
    "ProviderContractError",
    "ProviderError",
    "ReadOnlyDataDirectoryError",
    "RuntimeClosedError",
    "SchemaVersionError",
    "SecretInIdentifierError",
    "ServerBusyError",
    "SocketInUseError",
    "StaleLeaseError",
    "StaleResultError",
    "StorageCorruptError",
    "StorageFullError",
    "StorageIOError",
    "StoreConstraintError",
    "StoreError",
    "TooManyConnectionsError",
    "TransientProviderError",
    "UnknownClaimError",
    "UnknownConflictError",
    "UnknownDirectiveError",
    "UnknownMemoryError",
    "UnknownRequestError",
    "VectorIdentityMismatchError",
    "VectorIndexCorruptError",
    "VectorIndexError",
]


class CairnError(Exception):
    """Base of every error cairn raises on purpose."""


class InvalidInputError(CairnError, ValueError):
    """The caller's input is malformed; nothing was written."""


class ConfigurationError(InvalidInputError):
    """The configuration (``cairn.toml`` or a ``CAIRN_*`` variable) is invalid.

    ``source`` is where the bad value came from (the file and table, or the variable's
    name) and ``key`` the setting (None for an unreadable file or an unknown table); the
    message names both and what was expected.
    """

    def __init__(self, message: str, *, source: str, key: str | None = None) -> None:
        super().__init__(message)
        self.source = source
        self.key = key


class InvalidScopeError(InvalidInputError):
    """A scope name or scope/context pair is invalid."""


class InvalidTemporalError(InvalidInputError):
    """A timestamp or validity interval is malformed."""


class InvalidMetadataError(InvalidInputError):
    """Caller metadata (tags, importance, extra) of a turn, a remember or a recall
    filter is of the wrong shape or over its cap; the message names the field."""


class ConflictingEventError(InvalidInputError):
    """An event ID was already stored with different content.

    Same ID and same content is an idempotent no-op; this error means the caller reused an
    ID for something else, and the stored event is kept unchanged.
    """

    def __init__(self, event_id: str) -> None:
        super().__init__(f"event {event_id!r} already stored with different content")
        self.event_id = event_id


class MessageTooLargeError(InvalidInputError):
    """A turn would become more segments than one message may (``MAX_SEGMENTS``)."""


class ProtectedClaimError(InvalidInputError):
    """Persona and working rows evolve only through their own rebuilds, never through the
    generic lifecycle calls (forget, archive)."""


class InvalidTransitionError(InvalidInputError):
    """The requested state change does not apply to the row's current state."""


class SecretInIdentifierError(InvalidInputError):
    """An event, session or request ID looks like it holds a secret. IDs are stored,
    indexed and shown verbatim (never redacted, or idempotency would break), so such an ID
    is refused and nothing of the call is stored."""


class _UnknownKeyError(CairnError, KeyError):
    # KeyError's str() is the repr of its argument ("'f1'"): show the sentence instead.
    def __str__(self) -> str:
        return str(self.args[0]) if self.args else self.__class__.__name__


class UnknownRequestError(_UnknownKeyError):
    """No recall request with that ID exists for the agent."""


class UnknownClaimError(_UnknownKeyError):
    """No claim with that ID exists for the agent."""


class UnknownMemoryError(UnknownClaimError):
    """The ID names neither a claim nor a stored turn of the agent (forget takes both)."""


class UnknownDirectiveError(_UnknownKeyError):
    """No directive with that ID exists for the agent."""


class UnknownConflictError(_UnknownKeyError):
    """No conflict with that ID exists for the agent."""


class StoreError(CairnError):
    """The database refused an operation or is damaged."""


class SchemaVersionError(StoreError):
    """The database was written by a newer schema than this cairn knows."""


class ClearPendingError(StoreError):
    """A clear job is pending for the agent: claim writes are refused until it finishes."""


class StoreConstraintError(StoreError):
    """A write broke a constraint of the schema (a bug or a race); nothing of its
    transaction was committed."""


class StorageFullError(StoreError):
    """The disk, or the database's size limit, is full (``SQLITE_FULL``); the transaction
    was rolled back."""


class StorageIOError(StoreError):
    """The operating system failed a read or write of the database (``SQLITE_IOERR``)."""


class StorageCorruptError(StoreError):
    """The database file is damaged or is not a database (``SQLITE_CORRUPT``,
    ``SQLITE_NOTADB``)."""


class PipelineStalledError(StoreError):
    """An agent's background extraction or embedding cannot commit: its last writes all
    failed on a storage fault (a full disk, an I/O error), so a wait for it to settle
    gives up instead of waiting forever (``cairn.runtime.stall_watch``). Nothing stored is
    lost: the turns stay stored and pending, and the pipeline finishes them by itself once
    the fault clears (a later wait, ``cairn ingest`` or drain then completes)."""


class StaleResultError(CairnError):
    """A result's execution identity is no longer current; it was not committed."""


class StaleLeaseError(StaleResultError):
    """A batch commit or failure came with a lease token that is no longer the batch's.

    The lease expired and another worker took the batch, or the batch was settled under
    another token; the late worker's result is dropped.
    """


class ProposalRejectedError(CairnError):
    """An extraction proposal broke a batch-level rule (an event neither cited nor
    discarded, a source outside the batch, an unsupported preference or span); the batch
    consumes nothing and is retried with backoff."""


class ProviderError(CairnError):
    """A model provider failed."""


class TransientProviderError(ProviderError):
    """A provider failure worth retrying (timeouts, 429, 5xx, transport errors)."""


class ProviderContractError(ProviderError):
    """The provider answered, but with something unusable (schema, dimension)."""


class VectorIndexError(CairnError):
    """A vector projection could not be used."""


class VectorIndexCorruptError(VectorIndexError):
    """A vector file is unreadable; it is quarantined and recall degrades to lexical."""


class VectorIdentityMismatchError(VectorIndexError):
    """A vector file was built by another embedding identity."""


class RuntimeClosedError(CairnError, RuntimeError):
    """The memory runtime is stopped or stopping and accepts no new work."""


class AgentUnavailableError(CairnError, RuntimeError):
    """The agent failed (to start, or too often in its failure window): this call is
    refused; the agent is tried again on a later call."""


class DrainTimeoutError(CairnError, TimeoutError):
    """Accepted work did not settle within the drain timeout; nothing was closed under it."""


class DrainingError(RuntimeClosedError):
    """The runtime is drained: writes are refused until it is resumed."""


class DataDirectoryInUseError(CairnError):
    """Another cairn process (a server or a command) holds the data directory's lock."""


class IpcError(CairnError):
    """The IPC conversation with a cairn server failed."""


class ProtocolError(IpcError):
    """A frame was malformed, oversize, or not expected at this point of the conversation."""


class ProtocolVersionError(ProtocolError):
    """Client and server share no protocol version."""


class ServerBusyError(IpcError):
    """The connection already has as many requests in flight as the server allows.

    Nothing was started; retry once an answer arrives.
    """


class TooManyConnectionsError(IpcError, ConnectionRefusedError):
    """The server already serves as many connections as it allows; this one was refused.

    Nothing was started; retry once other clients have disconnected.
    """


class ConnectionLostError(IpcError, ConnectionError):
    """The peer closed the connection; a request without an answer may or may not have run."""


class ArgumentOutOfRangeError(InvalidInputError):
    """A numeric argument (``k``, ``budget_bytes``, ``wait_s``, ``timeout_s``, a
    ``limit``, an ``as_of`` time, a query vector, attention item IDs) is outside the range
    :mod:`cairn.api.bounds` documents for it; the message names the argument, the value
    and the range, and nothing was done."""


class SocketInUseError(CairnError):
    """A live server already listens on the socket path; it is never replaced."""


class ReadOnlyDataDirectoryError(CairnError):
    """The data directory cannot be written; only the read-only commands can run on it."""


class InvalidIdentifierError(InvalidInputError):
    """A caller-given ID (event, session, scope, turn, request) is blank, holds a control
    character or surrogate, or is longer than ``cairn.domain.ids.MAX_ID_BYTES``; nothing
    of the call is stored."""


class IngestStoppedError(CairnError):
    """A file ingest stopped partway on a storage failure (a full disk, an I/O error).

    ``stored_lines`` lines were stored (or were duplicates) before line ``stopped_at``;
    that line and the rest were not. Intake is idempotent by event ID, so running the
    same file again once the fault is cleared stores the rest.
    """

    def __init__(
        self,
        message: str,
        *,
        stored_lines: int,
        stopped_at: int,
        summary: dict[str, object] | None = None,
    ) -> None:
        super().__init__(message)
        self.stored_lines = stored_lines
        self.stopped_at = stopped_at
        # The counts and rejected lines of the part before the stop (cairn ingest JSON).
        self.summary = summary or {}
