package sinkcoord

import (
	"context"
	"fmt"
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

// entryCall lifts result<entry, error> (payload at ret + 8).
func (w *Writer) entryCall(id fn, what string) (Entry, error) {
	in := w.in
	if err := in.call(id, what); err != nil {
		return Entry{}, err
	}
	ret := uint32(in.stack[0])
	l := lifter{mem: in.mem}
	var e Entry
	var cerr error
	switch l.u8(ret) {
	case 0:
		e = l.entry(ret + 8)
	case 1:
		cerr = l.callError(ret + 8)
	default:
		l.fail("a result at %d has discriminant %d", ret, l.u8(ret))
	}
	if err := in.finish(id, ret, &l, what); err != nil {
		return Entry{}, err
	}
	return e, cerr
}

// Report buffers the entry for checkpoint (strictly increasing) and returns
// the event to send.
func (w *Writer) Report(checkpoint CheckpointID, committables [][]byte, watermark *int64, savepoint bool) (Entry, error) {
	defer w.lock()()
	in := w.in
	p, n, err := in.lowerByteLists(committables)
	if err != nil {
		return Entry{}, err
	}
	s := &in.stack
	s[0], s[1], s[2], s[3], s[4], s[5] = uint64(w.self), checkpoint, uint64(p), uint64(n), 0, 0
	if watermark != nil {
		s[4], s[5] = 1, uint64(*watermark)
	}
	s[6] = b2u64(savepoint)
	return w.entryCall(fnReport, "report")
}

// EndInput returns the END entry to send; appended to a restored END entry.
func (w *Writer) EndInput(committables [][]byte, watermark *int64) (Entry, error) {
	defer w.lock()()
	in := w.in
	p, n, err := in.lowerByteLists(committables)
	if err != nil {
		return Entry{}, err
	}
	s := &in.stack
	s[0], s[1], s[2], s[3], s[4] = uint64(w.self), uint64(p), uint64(n), 0, 0
	if watermark != nil {
		s[3], s[4] = 1, uint64(*watermark)
	}
	return w.entryCall(fnEndInput, "end-input")
}

// Committed forwards the coordinator's committed-up-to: drops buffered
// entries up to checkpoint.
func (w *Writer) Committed(checkpoint CheckpointID) error {
	defer w.lock()()
	w.in.stack[0], w.in.stack[1] = uint64(w.self), checkpoint
	if err := w.in.call(fnWriterCommitted, "committed"); err != nil {
		return err
	}
	return w.in.unitResult(fnWriterCommitted, "committed")
}

// CheckpointAborted clears the savepoint flag of entry checkpoint.
func (w *Writer) CheckpointAborted(checkpoint CheckpointID) error {
	defer w.lock()()
	w.in.stack[0], w.in.stack[1] = uint64(w.self), checkpoint
	if err := w.in.call(fnWriterAborted, "checkpoint-aborted"); err != nil {
		return err
	}
	return w.in.unitResult(fnWriterAborted, "checkpoint-aborted")
}

// State is the buffer as versioned bytes (the writer's checkpointed state).
func (w *Writer) State() ([]byte, error) {
	defer w.lock()()
	in := w.in
	in.stack[0] = uint64(w.self)
	if err := in.call(fnWriterState, "state"); err != nil {
		return nil, err
	}
	ret := uint32(in.stack[0])
	l := lifter{mem: in.mem}
	b := l.bytes(ret)
	if err := in.finish(fnWriterState, ret, &l, "state"); err != nil {
		return nil, err
	}
	return b, nil
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
	if err := in.call(fnWriterRestore, "restore"); err != nil {
		return nil, err
	}
	ret := uint32(in.stack[0])
	l := lifter{mem: in.mem}
	var entries []Entry
	var cerr error
	switch l.u8(ret) {
	case 0:
		ptr, count := l.u32(ret+4), l.u32(ret+8)
		if l.view(ptr, count, 40) != nil {
			entries = make([]Entry, count)
			for i := range count {
				entries[i] = l.entry(ptr + 40*i)
			}
		}
	case 1:
		cerr = l.callError(ret + 4)
	default:
		l.fail("a result at %d has discriminant %d", ret, l.u8(ret))
	}
	if err := in.finish(fnWriterRestore, ret, &l, "restore"); err != nil {
		return nil, err
	}
	return entries, cerr
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

// optSnapshot lifts result<option<snapshot>, error>: the error or the
// option at ret + 8, the snapshot at ret + 16.
func (t *Table) optSnapshot(id fn, what string) (*Snapshot, error) {
	in := t.in
	if err := in.call(id, what); err != nil {
		return nil, err
	}
	ret := uint32(in.stack[0])
	l := lifter{mem: in.mem}
	var snap *Snapshot
	var cerr error
	switch l.u8(ret) {
	case 0:
		switch l.u8(ret + 8) {
		case 0:
		case 1:
			s := l.snapshot(ret + 16)
			snap = &s
		default:
			l.fail("an option at %d has discriminant %d", ret+8, l.u8(ret+8))
		}
	case 1:
		cerr = l.callError(ret + 8)
	default:
		l.fail("a result at %d has discriminant %d", ret, l.u8(ret))
	}
	if err := in.finish(id, ret, &l, what); err != nil {
		return nil, err
	}
	return snap, cerr
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

// listCall lifts result<list<T>, error> (list at ret + 4, error at ret + 4).
func listCall[T any](in *instance, id fn, what string, size uint32, lift func(*lifter, uint32) T) ([]T, error) {
	if err := in.call(id, what); err != nil {
		return nil, err
	}
	ret := uint32(in.stack[0])
	l := lifter{mem: in.mem}
	var out []T
	var cerr error
	switch l.u8(ret) {
	case 0:
		ptr, n := l.u32(ret+4), l.u32(ret+8)
		if l.view(ptr, n, size) != nil {
			out = make([]T, n)
			for i := range n {
				out[i] = lift(&l, ptr+size*i)
			}
		}
	case 1:
		cerr = l.callError(ret + 4)
	default:
		l.fail("a result at %d has discriminant %d", ret, l.u8(ret))
	}
	if err := in.finish(id, ret, &l, what); err != nil {
		return nil, err
	}
	return out, cerr
}

// ListSnapshots is every snapshot, by id.
func (t *Table) ListSnapshots() ([]Snapshot, error) {
	defer t.lock()()
	return listCall(t.in, fnListSnapshots, "list-snapshots", 56, (*lifter).snapshot)
}

// ListTags is every tag, by name in byte order.
func (t *Table) ListTags() ([]Tag, error) {
	defer t.lock()()
	return listCall(t.in, fnListTags, "list-tags", 48, (*lifter).tag)
}

// Free releases the table's instance.
func (t *Table) Free() {
	defer t.lock()()
	t.in.trapped = &TrapError{Call: "use after Free", Cause: fmt.Errorf("the table was freed")}
	_ = t.in.mod.Close(context.Background())
}
