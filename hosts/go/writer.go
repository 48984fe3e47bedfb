package sinkcoord

import (
	"context"
	"fmt"

	"github.com/sink-coordinator/sink-coordinator-go/internal/abi"
)

// Writer is the writer-side half of the protocol (SEMANTICS 11, wit
// `writer`): what a writer keeps in its own checkpointed state and which
// event it sends. One instance of its own; methods are serialized.
type Writer struct {
	in   *instance
	self uint32
	h    uint32
}

// NewWriter creates the writer helper of subtask. A writer calls no import;
// storage and clock may be nil.
func (r *Runtime) NewWriter(ctx context.Context, subtask uint32, storage Storage, clock Clock) (*Writer, error) {
	in, err := r.newInstance(ctx, storage, clock)
	if err != nil {
		return nil, err
	}
	in.stack[0] = uint64(subtask)
	if err := in.call(fnWriterNew, "writer constructor"); err != nil {
		_ = in.mod.Close(context.Background())
		return nil, err
	}
	w := &Writer{in: in, h: uint32(in.stack[0])}
	rep, ok := in.rep(w.h)
	if !ok {
		_ = in.mod.Close(context.Background())
		return nil, &TrapError{Call: "writer constructor", Cause: fmt.Errorf("it returned the unknown handle %d", w.h)}
	}
	w.self = rep
	return w, nil
}

func (w *Writer) lock() func() {
	w.in.mu.Lock()
	return w.in.mu.Unlock
}

// entryCall lifts result<entry, error>.
func (w *Writer) entryCall(id fn, what string) (Entry, error) {
	return resultCall(w.in, id, what, abi.ResultEntryErrorPayload, (*lifter).entry)
}

// Report buffers the entry for checkpoint (strictly increasing) and returns
// the event to send.
func (w *Writer) Report(checkpoint CheckpointID, committables [][]byte, watermark *int64, savepoint bool) (Entry, error) {
	defer w.lock()()
	in := w.in
	if err := in.lowerEntryArgs(2, committables, watermark); err != nil {
		return Entry{}, err
	}
	in.stack[0], in.stack[1], in.stack[6] = uint64(w.self), checkpoint, b2u64(savepoint)
	return w.entryCall(fnReport, "report")
}

// EndInput returns the END entry to send; appended to a restored END entry.
func (w *Writer) EndInput(committables [][]byte, watermark *int64) (Entry, error) {
	defer w.lock()()
	in := w.in
	if err := in.lowerEntryArgs(1, committables, watermark); err != nil {
		return Entry{}, err
	}
	in.stack[0] = uint64(w.self)
	return w.entryCall(fnEndInput, "end-input")
}

// Committed forwards the coordinator's committed-up-to: drops buffered
// entries up to checkpoint.
func (w *Writer) Committed(checkpoint CheckpointID) error {
	defer w.lock()()
	w.in.stack[0], w.in.stack[1] = uint64(w.self), checkpoint
	return w.in.unitCall(fnWriterCommitted, "committed")
}

// CheckpointAborted clears the savepoint flag of entry checkpoint.
func (w *Writer) CheckpointAborted(checkpoint CheckpointID) error {
	defer w.lock()()
	w.in.stack[0], w.in.stack[1] = uint64(w.self), checkpoint
	return w.in.unitCall(fnWriterAborted, "checkpoint-aborted")
}

// State is the buffer as versioned bytes (the writer's checkpointed state).
func (w *Writer) State() ([]byte, error) {
	defer w.lock()()
	in := w.in
	in.stack[0] = uint64(w.self)
	return valueCall(in, fnWriterState, "state", (*lifter).bytes)
}

// Restore restores a fresh writer from state taken at checkpoint; it
// returns the entries of the single Restored event to send.
func (w *Writer) Restore(state []byte, checkpoint CheckpointID) ([]Entry, error) {
	defer w.lock()()
	in := w.in
	p, n, err := in.lowerBytes(state)
	if err != nil {
		return nil, err
	}
	in.stack[0], in.stack[1], in.stack[2], in.stack[3] = uint64(w.self), uint64(p), uint64(n), checkpoint
	return listCall(in, fnWriterRestore, "restore", abi.ResultListEntryErrorPayload, abi.EntrySize, (*lifter).entry)
}

// Free drops the writer and releases its instance.
func (w *Writer) Free() {
	defer w.lock()()
	w.in.free(fnWriterDtor, w.h)
}

// Table is the read-only view of a table (wit `table`), on an instance of
// its own over storage.
type Table struct {
	in *instance
}

// NewTable reads the table in storage.
func (r *Runtime) NewTable(ctx context.Context, storage Storage, clock Clock) (*Table, error) {
	if storage == nil {
		return nil, fmt.Errorf("sinkcoord: a table needs a Storage")
	}
	in, err := r.newInstance(ctx, storage, clock)
	if err != nil {
		return nil, err
	}
	return &Table{in: in}, nil
}

func (t *Table) lock() func() {
	t.in.mu.Lock()
	return t.in.mu.Unlock
}

// optSnapshot lifts result<option<snapshot>, error>.
func (t *Table) optSnapshot(id fn, what string) (*Snapshot, error) {
	return resultCall(t.in, id, what, abi.ResultOptionSnapshotErrorPayload, func(l *lifter, p uint32) *Snapshot {
		switch l.u8(p) {
		case 0:
		case 1:
			s := l.snapshot(p + abi.OptionSnapshotPayload)
			return &s
		default:
			l.fail("an option at %d has discriminant %d", p, l.u8(p))
		}
		return nil
	})
}

// LatestSnapshot is the newest snapshot, or nil.
func (t *Table) LatestSnapshot() (*Snapshot, error) {
	defer t.lock()()
	return t.optSnapshot(fnLatestSnapshot, "latest-snapshot")
}

// SnapshotByID is snapshot id, or nil.
func (t *Table) SnapshotByID(id uint64) (*Snapshot, error) {
	defer t.lock()()
	t.in.stack[0] = id
	return t.optSnapshot(fnSnapshotByID, "snapshot-by-id")
}

// listCall lifts result<list<T>, error> (payload at ret + at): elements
// of size bytes, each lifted by lift.
func listCall[T any](in *instance, id fn, what string, at, size uint32, lift func(*lifter, uint32) T) ([]T, error) {
	return resultCall(in, id, what, at, func(l *lifter, p uint32) []T {
		ptr, n := l.list(p)
		if l.elements(ptr, n, size) == nil {
			return nil
		}
		out := make([]T, n)
		for i := range n {
			out[i] = lift(l, ptr+size*i)
		}
		return out
	})
}

// ListSnapshots is every snapshot, by id.
func (t *Table) ListSnapshots() ([]Snapshot, error) {
	defer t.lock()()
	return listCall(t.in, fnListSnapshots, "list-snapshots", abi.ResultListSnapshotErrorPayload, abi.SnapshotSize, (*lifter).snapshot)
}

// ListTags is every tag, by name in byte order.
func (t *Table) ListTags() ([]Tag, error) {
	defer t.lock()()
	return listCall(t.in, fnListTags, "list-tags", abi.ResultListTagErrorPayload, abi.TagSize, (*lifter).tag)
}

// Free releases the table's instance.
func (t *Table) Free() {
	defer t.lock()()
	t.in.trapped = &TrapError{Call: "use after Free", Cause: fmt.Errorf("the table was freed")}
	_ = t.in.mod.Close(context.Background())
}
