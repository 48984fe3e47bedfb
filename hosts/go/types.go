// Package sinkcoord runs the sink coordinator (the exactly-once commit
// logic of SEMANTICS v2.1, shipped as dist/sink-coordinator-<version>.core.wasm)
// on wazero, the pure-Go WebAssembly runtime.
//
// The core module speaks the canonical ABI of the component
// sink:coordinator (wit/coordinator.wit); this package does by hand what a
// component runtime's generated glue does (docs/embedding.md): it lowers
// arguments into guest memory allocated with cabi_realloc, lifts results
// from the return area and calls cabi_post_*. A host supplies only a
// Storage (where the table's snapshot log and tags live) and a Clock.
//
// A Runtime compiles the module once (optionally through a compilation cache
// directory); every Coordinator, Writer and Table is an instance of that
// compiled module, as the component model's one instance per resource owner.
package sinkcoord

import "fmt"

// CheckpointID is a checkpoint number: 0 ..= 2^63-2 for ordinary
// checkpoints; End (2^63-1) is the end of input.
type CheckpointID = uint64

// End is the checkpoint id of END entries (end of input).
const End CheckpointID = 1<<63 - 1

// Entry is what one writer reports for one checkpoint.
type Entry struct {
	Checkpoint CheckpointID
	// Opaque serialized committables, in report order.
	Committables [][]byte
	// Nil: no watermark yet (orders below every number).
	Watermark *int64
	Savepoint bool
}

// FinalCommitMode says when the final commit happens.
type FinalCommitMode uint8

const (
	// OnCheckpoint: at the first checkpoint-complete after the last END entry.
	OnCheckpoint FinalCommitMode = iota
	// OnEndInput: within the call that delivers the last END entry.
	OnEndInput
)

var finalCommitNames = [...]string{"on-checkpoint", "on-end-input"}

func (m FinalCommitMode) String() string { return enumName(finalCommitNames[:], m, "FinalCommitMode") }

// RecoveryMode says what a recovery that committed something asks for.
type RecoveryMode uint8

const (
	// Restart: the host fails over once more (Outcome.RestartRequired).
	Restart RecoveryMode = iota
	// Continue: the coordinator keeps running.
	Continue
)

var recoveryNames = [...]string{"restart", "continue"}

func (m RecoveryMode) String() string { return enumName(recoveryNames[:], m, "RecoveryMode") }

// Config is a coordinator's configuration; nothing is checked until Start.
type Config struct {
	// 1 ..= 1_000_000 writer subtasks.
	Parallelism uint32
	// Identity of this sink across restarts (non-empty); a restore's state wins.
	CommitUser string
	// False: batch; the final commit happens on the last END entry.
	Checkpointing       bool
	FinalCommit         FinalCommitMode
	ForceCreateSnapshot bool
	SavepointAutoTag    bool
	TagTimeRetainedMs   *uint64
	Recovery            RecoveryMode
}

// RestorePoint is a global failover: restore from the coordinator state of
// checkpoint Checkpoint.
type RestorePoint struct {
	Checkpoint CheckpointID
	State      []byte
	// Writers that had fully finished before Checkpoint; they send no restore event.
	FinishedSubtasks []uint32
}

// Limits are size limits in bytes, each 1 ..= 2^32 (wit `limits`).
type Limits struct {
	MaxCommittableBytes uint64
	MaxEventBytes       uint64
	MaxSnapshotBytes    uint64
}

// Lifecycle is a coordinator's state.
type Lifecycle uint8

const (
	Created Lifecycle = iota
	Restoring
	Running
	Closed
	Failed
)

var lifecycleNames = [...]string{"created", "restoring", "running", "closed", "failed"}

func (l Lifecycle) String() string { return enumName(lifecycleNames[:], l, "Lifecycle") }

// enumName is the WIT name of case v, or Type(v) for a value outside the enum.
func enumName[T ~uint8](names []string, v T, typ string) string {
	if int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", typ, uint8(v))
}

// Outcome is what one call did.
type Outcome struct {
	// State after the call.
	State Lifecycle
	// Identifiers of the snapshots this call wrote, in log order.
	Committed   []CheckpointID
	TagsCreated []string
	TagsDeleted []string
	// The recovery committed something and Recovery is Restart: fail over once more.
	RestartRequired bool
	// Committed-up-to after the call (SEMANTICS 5.5); nil until the commit
	// rule first ran with a target. Forward it to every writer (Writer.Committed).
	CommittedUpTo *CheckpointID
}

// WriterEvent is one writer event of a batch: the arguments of one Event call.
type WriterEvent struct {
	Subtask uint32
	Attempt uint32
	Entry   Entry
}

// PackedEvent is one event of Coordinator.EventsPacked: an Entry whose
// committables are one block (PackCommittables).
type PackedEvent struct {
	Subtask    uint32
	Attempt    uint32
	Checkpoint CheckpointID
	// The committables as one block: a LEB128 count, then per committable a
	// LEB128 length and its bytes (PackCommittables writes it).
	Committables []byte
	Watermark    *int64
	Savepoint    bool
}

// BatchEffects is what a batch committed or tagged.
type BatchEffects struct {
	Committed       []CheckpointID
	TagsCreated     []string
	TagsDeleted     []string
	RestartRequired bool
}

// BatchOutcome is the merged outcome of a batch.
type BatchOutcome struct {
	// State after the batch (the last event's; for an empty batch, the current state).
	State         Lifecycle
	CommittedUpTo *CheckpointID
	// Nil: the batch committed nothing, created and deleted no tag and
	// requires no restart.
	Effects *BatchEffects
}

// Committable is one committable of a snapshot with the subtask that reported it.
type Committable struct {
	Subtask uint32
	Bytes   []byte
}

// Snapshot is one committed snapshot of the table.
type Snapshot struct {
	ID           uint64
	CommitUser   string
	Identifier   CheckpointID
	Watermark    *int64
	TimeMs       uint64
	Committables []Committable
}

// Tag is one tag of the table.
type Tag struct {
	Name         string
	SnapshotID   uint64
	Identifier   CheckpointID
	CreateTimeMs uint64
	ExpireTimeMs *uint64
}
