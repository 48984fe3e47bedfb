"""sink-coordinator: an exactly-once commit coordinator for streaming sinks,
a WebAssembly component run by wasmtime-py.

    from sink_coordinator import Config, Coordinator, MemoryStorage, Table, Writer

    storage = MemoryStorage()
    coordinator = Coordinator(Config(parallelism=1, commit_user="job-1"), storage)
    coordinator.start()
    writer = Writer(0)
    coordinator.event(0, 0, writer.report(1, [b"file-1"]))
    coordinator.checkpoint(1)
    outcome = coordinator.checkpoint_complete(1)   # commits checkpoint 1
    if outcome.committed_up_to is not None:        # None: nothing committed yet
        writer.committed(outcome.committed_up_to)
    print(Table(storage).list_snapshots())
"""

from .errors import (
    BackendError,
    BackendIOError,
    CoordinatorError,
    CorruptStateError,
    DeclinedError,
    IllegalStateError,
    IncompatibleComponent,
    InvalidConfigError,
    InvalidEventError,
    InvalidKeyError,
    StorageError,
    TrapError,
    ValueTooLargeError,
)
from .handles import Coordinator, Table, Writer, pack_committables
from .object_storage import ObjectStoreStorage
from . import paimon
from .runtime import COMPONENT_VERSION, Runtime, embedded_wasm
from .storage import (
    DEFAULT_MAX_VALUE_BYTES,
    MAX_HINT_BYTES,
    Clock,
    DirectoryStorage,
    ManualClock,
    MemoryStorage,
    Storage,
    SystemClock,
    check_key_rules,
)
from .types import (
    Config,
    Entry,
    FinalCommitMode,
    Lifecycle,
    Limits,
    Outcome,
    RecoveryMode,
    RestorePoint,
    Snapshot,
    TableFormat,
    Tag,
    WriterEvent,
)
from .version import COMPATIBLE_VERSIONS, check_version

__version__ = COMPONENT_VERSION

__all__ = [
    "BackendError",
    "BackendIOError",
    "COMPATIBLE_VERSIONS",
    "COMPONENT_VERSION",
    "DEFAULT_MAX_VALUE_BYTES",
    "Clock",
    "Config",
    "Coordinator",
    "CoordinatorError",
    "CorruptStateError",
    "DeclinedError",
    "DirectoryStorage",
    "Entry",
    "FinalCommitMode",
    "IllegalStateError",
    "IncompatibleComponent",
    "InvalidConfigError",
    "InvalidEventError",
    "InvalidKeyError",
    "Lifecycle",
    "Limits",
    "MAX_HINT_BYTES",
    "ManualClock",
    "MemoryStorage",
    "ObjectStoreStorage",
    "Outcome",
    "RecoveryMode",
    "RestorePoint",
    "Runtime",
    "Snapshot",
    "Storage",
    "StorageError",
    "SystemClock",
    "Table",
    "TableFormat",
    "Tag",
    "TrapError",
    "ValueTooLargeError",
    "Writer",
    "WriterEvent",
    "check_key_rules",
    "check_version",
    "embedded_wasm",
    "pack_committables",
    "paimon",
]
