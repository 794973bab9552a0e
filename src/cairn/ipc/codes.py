"""Error codes on the wire, and the cairn error each one stands for (design/ipc.md).

The server names a failure by the most specific code in ``ERROR_CODES`` that matches the
raised error; the client raises that class again, so ``except InvalidInputError`` works the
same over IPC as embedded.
"""

from __future__ import annotations

from cairn.errors import (
    AgentUnavailableError,
    ArgumentOutOfRangeError,
    CairnError,
    ClearPendingError,
    ConflictingEventError,
    ConnectionLostError,
    DataDirectoryInUseError,
    DrainingError,
    DrainTimeoutError,
    InvalidInputError,
    InvalidMetadataError,
    InvalidScopeError,
    InvalidTemporalError,
    InvalidTransitionError,
    MessageTooLargeError,
    PipelineStalledError,
    ProposalRejectedError,
    ProtectedClaimError,
    ProtocolError,
    ProtocolVersionError,
    ProviderContractError,
    ProviderError,
    RuntimeClosedError,
    SchemaVersionError,
    SecretInIdentifierError,
    StaleLeaseError,
    StaleResultError,
    StoreError,
    TooManyConnectionsError,
    TransientProviderError,
    UnknownClaimError,
    UnknownConflictError,
    UnknownDirectiveError,
    UnknownMemoryError,
    UnknownRequestError,
    VectorIdentityMismatchError,
    VectorIndexCorruptError,
    VectorIndexError,
)

__all__ = [
    "ERROR_CODES",
    "IDLE_TIMEOUT",
    "INTERNAL",
    "TOO_MANY_CONNECTIONS",
    "code_for",
    "error_for",
]

INTERNAL = "internal"
# Connection-level codes (``id`` nil): the server refused the connection, or closed it.
TOO_MANY_CONNECTIONS = "too_many_connections"
IDLE_TIMEOUT = "idle_timeout"

# Most specific first: the first class the error is an instance of names it.
ERROR_CODES: tuple[tuple[type[CairnError], str], ...] = (
    (ConflictingEventError, "conflicting_event"),
    (MessageTooLargeError, "message_too_large"),
    (SecretInIdentifierError, "secret_in_identifier"),
    (InvalidScopeError, "invalid_scope"),
    (InvalidTemporalError, "invalid_temporal"),
    (InvalidMetadataError, "invalid_metadata"),
    (ArgumentOutOfRangeError, "out_of_range"),
    (ProtectedClaimError, "protected_claim"),
    (InvalidTransitionError, "invalid_transition"),
    (InvalidInputError, "invalid_input"),
    (UnknownRequestError, "unknown_request"),
    (UnknownMemoryError, "unknown_memory"),
    (UnknownClaimError, "unknown_claim"),
    (UnknownDirectiveError, "unknown_directive"),
    (UnknownConflictError, "unknown_conflict"),
    (SchemaVersionError, "schema_version"),
    (ClearPendingError, "clear_pending"),
    (PipelineStalledError, "pipeline_stalled"),
    (StoreError, "store_error"),
    (StaleLeaseError, "stale_lease"),
    (StaleResultError, "stale_result"),
    (ProposalRejectedError, "proposal_rejected"),
    (TransientProviderError, "provider_unavailable"),
    (ProviderContractError, "provider_contract"),
    (ProviderError, "provider_error"),
    (VectorIndexCorruptError, "vector_index_corrupt"),
    (VectorIdentityMismatchError, "vector_identity_mismatch"),
    (VectorIndexError, "vector_index"),
    (DrainingError, "draining"),
    (RuntimeClosedError, "runtime_closed"),
    (DrainTimeoutError, "drain_timeout"),
    (AgentUnavailableError, "agent_unavailable"),
    (DataDirectoryInUseError, "data_directory_in_use"),
    (ProtocolVersionError, "version_mismatch"),
    (CairnError, "cairn_error"),
)
# Frame-level codes: the frame itself was refused (all raise ProtocolError on the client).
PROTOCOL_CODES = frozenset(
    {"malformed", "unknown_type", "frame_too_large", "handshake_required"}
)
_CONNECTION_CODES: dict[str, type[CairnError]] = {
    TOO_MANY_CONNECTIONS: TooManyConnectionsError,
    IDLE_TIMEOUT: ConnectionLostError,
}
_CLASSES = {code: kind for kind, code in ERROR_CODES}


def code_for(error: CairnError) -> str:
    for kind, code in ERROR_CODES:
        if isinstance(error, kind):
            return code
    return "cairn_error"  # pragma: no cover - CairnError closes the table


def error_for(code: str, message: str) -> CairnError:
    """The cairn error a code names; unknown codes (a newer server) stay CairnError."""
    if code in PROTOCOL_CODES:
        return ProtocolError(f"{code}: {message}")
    if code == INTERNAL:
        return CairnError(f"internal server error: {message}")
    if (connection_error := _CONNECTION_CODES.get(code)) is not None:
        return connection_error(message)
    kind = _CLASSES.get(code, CairnError)
    # Rebuilt from the message alone: constructors with extra arguments (ConflictingEventError)
    # are bypassed so every class carries the server's text unchanged.
    error = kind.__new__(kind)
    error.args = (message,)
    return error
