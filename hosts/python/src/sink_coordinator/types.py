"""The WIT ``types`` interface as Python values: frozen dataclasses for the
records, ``str``-valued enums for the enums (their values are the WIT names).

Checkpoint ids, watermarks and times are plain ``int`` (u64/s64 in the WIT);
byte strings are ``bytes``."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import List, Optional, Tuple


class FinalCommitMode(str, enum.Enum):
    """When the END entries commit (SEMANTICS: final commit)."""

    ON_CHECKPOINT = "on-checkpoint"
    ON_END_INPUT = "on-end-input"


class RecoveryMode(str, enum.Enum):
    """What a global failover does with the job."""

    RESTART = "restart"
    CONTINUE = "continue"


class TableFormat(str, enum.Enum):
    """How a coordinator writes its table (WIT ``table-format``, component
    0.2.5; ``Coordinator.set_table_format``). Host configuration, not part of
    the state bytes: a restored coordinator is given its format again."""

    #: This project's own snapshot log (``snapshot/<20 digits>``, ``tag/<name>``).
    NATIVE = "native"
    #: An Apache Paimon append table with unaware buckets (docs/paimon.md):
    #: ``schema/schema-0`` must be in the storage, and every committable is one
    #: data file's metadata (encoding ``PCM`` v1).
    PAIMON = "paimon"


class Lifecycle(str, enum.Enum):
    """A coordinator's state."""

    CREATED = "created"
    RESTORING = "restoring"
    RUNNING = "running"
    CLOSED = "closed"
    FAILED = "failed"


@dataclass(frozen=True)
class Entry:
    """What one writer subtask reports for one checkpoint (or END)."""

    checkpoint: int
    committables: List[bytes] = field(default_factory=list)
    watermark: Optional[int] = None
    savepoint: bool = False


@dataclass(frozen=True)
class Config:
    """A coordinator's configuration (WIT ``config``)."""

    parallelism: int
    commit_user: str
    checkpointing: bool = True
    final_commit: FinalCommitMode = FinalCommitMode.ON_CHECKPOINT
    force_create_snapshot: bool = False
    savepoint_auto_tag: bool = False
    tag_time_retained_ms: Optional[int] = None
    recovery: RecoveryMode = RecoveryMode.RESTART


@dataclass(frozen=True)
class RestorePoint:
    """Where a restarted coordinator resumes: a checkpoint's state bytes."""

    checkpoint: int
    state: bytes
    finished_subtasks: List[int] = field(default_factory=list)


@dataclass(frozen=True)
class Limits:
    """Size limits in bytes (WIT ``limits``; each 1 ..= 2**32)."""

    max_committable_bytes: int = 1 << 30
    max_event_bytes: int = (5 << 30) // 4
    max_snapshot_bytes: int = (5 << 30) // 4


@dataclass(frozen=True)
class Outcome:
    """What a coordinator call did: its state after the call, the checkpoints
    it committed, the tags it created and deleted, whether the job must
    restart, and the committed-up-to to forward to every writer
    (``None`` until the commit rule first ran with a target)."""

    state: Lifecycle
    committed: List[int]
    tags_created: List[str]
    tags_deleted: List[str]
    restart_required: bool
    committed_up_to: Optional[int]


@dataclass(frozen=True)
class WriterEvent:
    """One writer event of a batch (``Coordinator.events``): the arguments
    of one ``Coordinator.event`` call."""

    subtask: int
    attempt: int
    entry: Entry


@dataclass(frozen=True)
class Snapshot:
    """One committed snapshot of the table (``committables``: (subtask, bytes))."""

    id: int
    commit_user: str
    identifier: int
    watermark: Optional[int]
    time_ms: int
    committables: List[Tuple[int, bytes]]


@dataclass(frozen=True)
class Tag:
    """A tag (one per savepoint) naming a snapshot."""

    name: str
    snapshot_id: int
    identifier: int
    create_time_ms: int
    expire_time_ms: Optional[int]
