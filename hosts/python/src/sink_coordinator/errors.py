"""Exceptions: one class per error kind of a coordinator, writer or table
call (WIT ``error-kind``, plus ``trap``), the errors a ``Storage``
implementation raises (WIT ``storage-error``), and the refusal of a component
of another version."""

from __future__ import annotations

from typing import Dict, List, Optional, Type

from .types import Outcome


class CoordinatorError(Exception):
    """A call returned an error (``kind``: the WIT kebab-case name)."""

    kind = "error"

    def __init__(self, message: str):
        super().__init__(f"{self.kind}: {message}")
        #: What happened, in one line (the component's message).
        self.message = message
        #: Set by ``Coordinator.events``: how many events were applied (the
        #: failing event's index; after ``declined`` or ``storage`` the host
        #: resends from there).
        self.applied: Optional[int] = None
        #: Set by ``Coordinator.events``: what the applied events did, merged.
        self.outcome: Optional[Outcome] = None


class DeclinedError(CoordinatorError):
    """The call was declined (not fatal: the instance goes on)."""

    kind = "declined"


class StorageError(CoordinatorError):
    """The table's storage failed during the call (fatal)."""

    kind = "storage"


class IllegalStateError(CoordinatorError):
    """The call is not allowed in the instance's state (fatal)."""

    kind = "illegal-state"


class InvalidEventError(CoordinatorError):
    """The call's input breaks the protocol or a size limit (fatal)."""

    kind = "invalid-event"


class InvalidConfigError(CoordinatorError):
    """The configuration or limits are invalid (fatal)."""

    kind = "invalid-config"


class CorruptStateError(CoordinatorError):
    """State bytes or table contents cannot be decoded (fatal)."""

    kind = "corrupt-state"


class TrapError(CoordinatorError):
    """The component trapped (a bug, or a host-imposed limit). Fatal: the
    handle is discarded, every later call raises ``TrapError`` too."""

    kind = "trap"


#: Error kind (WIT name) to its class.
ERRORS: Dict[str, Type[CoordinatorError]] = {
    c.kind: c
    for c in (
        DeclinedError,
        StorageError,
        IllegalStateError,
        InvalidEventError,
        InvalidConfigError,
        CorruptStateError,
        TrapError,
    )
}


class BackendError(Exception):
    """Raised by a ``Storage`` implementation: the component receives it as
    its ``storage-error`` (``kind``: ``io`` or ``invalid-key``) and fails the
    call with a ``StorageError``. Any other exception a storage raises traps
    the component."""

    kind = "io"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class BackendIOError(BackendError):
    """The backend failed (WIT ``storage-error.io``)."""

    kind = "io"


class InvalidKeyError(BackendError):
    """The backend refuses the key (WIT ``storage-error.invalid-key``)."""

    kind = "invalid-key"


class ValueTooLargeError(BackendIOError):
    """A value above a storage's bound (``DirectoryStorage``'s
    ``max_value_bytes``, or the hint bound), refused before it is read or
    written. The component receives it as ``storage-error.io`` with this
    message."""

    def __init__(self, key: str, size: int, limit: int):
        bound = "the hint limit" if key.startswith("hint/") else "the storage's max_value_bytes"
        super().__init__(f'the value of key "{key}" holds {size} bytes, more than {bound} ({limit} bytes)')
        #: The key.
        self.key = key
        #: The value's size in bytes (at least ``limit + 1`` if it grew while read).
        self.size = size
        #: The bound that applies to the key.
        self.limit = limit


class IncompatibleComponent(Exception):
    """A component refused at load: its WIT package version is outside
    ``COMPATIBLE_VERSIONS`` (``found``: the versions it exports)."""

    def __init__(self, message: str, found: List[str]):
        super().__init__(message)
        self.found = found
