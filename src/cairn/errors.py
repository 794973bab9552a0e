"""Errors raised by cairn.

Every error derives from :class:`CairnError` and, where a generic handler would reasonably
catch it, from the closest builtin as well::

    CairnError
    ├── InvalidInputError (ValueError)        bad caller input; nothing was written
    │   ├── InvalidScopeError
    │   ├── InvalidTemporalError
    │   ├── ConflictingEventError             same event ID, different content
    │   ├── ProtectedClaimError               persona/working rows have their own lifecycle
    │   └── InvalidTransitionError            e.g. approving a directive that is not a draft
    ├── UnknownRequestError (KeyError)        no recall request with that ID
    ├── UnknownClaimError (KeyError)          no claim with that ID in the agent
    ├── UnknownDirectiveError (KeyError)      no directive with that ID in the agent
    ├── StoreError                            the database refused or is damaged
    │   ├── SchemaVersionError                file written by a newer cairn
    │   └── ClearPendingError                 writes refused while a clear job runs
    ├── StaleResultError                      execution identity no longer current (fence)
    ├── ProviderError
    │   ├── TransientProviderError            worth retrying
    │   └── ProviderContractError             the provider answered something unusable
    ├── VectorIndexError
    │   ├── VectorIndexCorruptError           file unreadable: quarantined, recall degrades
    │   └── VectorIdentityMismatchError       file built by another embedding identity
    ├── RuntimeClosedError (RuntimeError)     the memory runtime is stopped or stopping
    └── DrainTimeoutError (TimeoutError)      accepted work did not settle in time
"""

from __future__ import annotations

__all__ = [
    "CairnError",
    "ClearPendingError",
    "ConflictingEventError",
    "DrainTimeoutError",
    "InvalidInputError",
    "InvalidScopeError",
    "InvalidTemporalError",
    "InvalidTransitionError",
    "ProtectedClaimError",
    "ProviderContractError",
    "ProviderError",
    "RuntimeClosedError",
    "SchemaVersionError",
    "StaleResultError",
    "StoreError",
    "TransientProviderError",
    "UnknownClaimError",
    "UnknownDirectiveError",
    "UnknownRequestError",
    "VectorIdentityMismatchError",
    "VectorIndexCorruptError",
    "VectorIndexError",
]


class CairnError(Exception):
    """Base of every error cairn raises on purpose."""


class InvalidInputError(CairnError, ValueError):
    """The caller's input is malformed; nothing was written."""


class InvalidScopeError(InvalidInputError):
    """A scope name or scope/context pair is invalid."""


class InvalidTemporalError(InvalidInputError):
    """A timestamp or validity interval is malformed."""


class ConflictingEventError(InvalidInputError):
    """An event ID was already stored with different content.

    Same ID and same content is an idempotent no-op; this error means the caller reused an
    ID for something else, and the stored event is kept unchanged.
    """

    def __init__(self, event_id: str) -> None:
        super().__init__(f"event {event_id!r} already stored with different content")
        self.event_id = event_id


class ProtectedClaimError(InvalidInputError):
    """Persona and working rows evolve only through their own rebuilds, never through the
    generic lifecycle calls (forget, archive)."""


class InvalidTransitionError(InvalidInputError):
    """The requested state change does not apply to the row's current state."""


class UnknownRequestError(CairnError, KeyError):
    """No recall request with that ID exists for the agent."""


class UnknownClaimError(CairnError, KeyError):
    """No claim with that ID exists for the agent."""


class UnknownDirectiveError(CairnError, KeyError):
    """No directive with that ID exists for the agent."""


class StoreError(CairnError):
    """The database refused an operation or is damaged."""


class SchemaVersionError(StoreError):
    """The database was written by a newer schema than this cairn knows."""


class ClearPendingError(StoreError):
    """A clear job is pending for the agent: claim writes are refused until it finishes."""


class StaleResultError(CairnError):
    """A result's execution identity is no longer current; it was not committed."""


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


class DrainTimeoutError(CairnError, TimeoutError):
    """Accepted work did not settle within the drain timeout; nothing was closed under it."""
