package sinkcoord

import (
	"context"
	"errors"
	"fmt"

	"github.com/sink-coordinator/sink-coordinator-go/internal/abi"
)

// Coordinator is the coordinator of one sink, one per sink and per
// incarnation (wit `coordinator`), on an instance of its own. Its methods
// are the WIT methods; they are serialized by a mutex, so a Coordinator may
// be shared by goroutines, but a Storage or Clock callback must not call
// back into it. Errors are the kind types (*InvalidEventError, ...), a
// *BatchError for batches, or a *TrapError.
type Coordinator struct {
	in   *instance
	self uint32 // the rep: methods take borrow<coordinator>, which is the rep
	h    uint32
	// The last committed-up-to an outcome or the query gave: still true
	// after a trap (it only grows within an instance).
	last *CheckpointID
}

// NewCoordinator creates a coordinator (state created; nothing is checked
// or read before Start) over storage and clock. restore, if not nil, is the
// global failover's restore point. The Runtime's Options.TableFormat, if not
// native, is applied before it returns.
func (r *Runtime) NewCoordinator(ctx context.Context, cfg Config, storage Storage, clock Clock, restore *RestorePoint) (*Coordinator, error) {
	if storage == nil || clock == nil {
		return nil, errors.New("sinkcoord: a coordinator needs a Storage and a Clock")
	}
	in, err := r.newInstance(ctx, storage, clock)
	if err != nil {
		return nil, err
	}
	c := &Coordinator{in: in}
	if err := c.construct(&cfg, restore); err != nil {
		_ = in.mod.Close(context.Background())
		return nil, err
	}
	if r.format != TableFormatNative {
		if err := c.SetTableFormat(r.format); err != nil {
			c.Free()
			return nil, err
		}
	}
	return c, nil
}

func (c *Coordinator) construct(cfg *Config, restore *RestorePoint) error {
	in := c.in
	up, ul, err := in.lowerString(cfg.CommitUser)
	if err != nil {
		return err
	}
	var s [abi.MaxFlatParams]uint64
	s[0], s[1], s[2] = uint64(cfg.Parallelism), uint64(up), uint64(ul)
	s[3], s[4], s[5], s[6] = b2u64(cfg.Checkpointing), uint64(cfg.FinalCommit), b2u64(cfg.ForceCreateSnapshot), b2u64(cfg.SavepointAutoTag)
	if cfg.FinalCommit > OnEndInput || cfg.Recovery > Continue {
		return fmt.Errorf("sinkcoord: config: final-commit %v / recovery %v is not a WIT case", cfg.FinalCommit, cfg.Recovery)
	}
	if cfg.TagTimeRetainedMs != nil {
		s[7], s[8] = 1, *cfg.TagTimeRetainedMs
	}
	s[9] = uint64(cfg.Recovery)
	if restore != nil {
		sp, sl, err := in.lowerBytes(restore.State)
		if err != nil {
			return err
		}
		fp, err := in.lowerArray(len(restore.FinishedSubtasks), 4, 4, func(buf []byte) error {
			for i, t := range restore.FinishedSubtasks {
				le.PutUint32(buf[4*i:], t)
			}
			return nil
		})
		if err != nil {
			return err
		}
		s[10], s[11], s[12], s[13], s[14], s[15] = 1, restore.Checkpoint, uint64(sp), uint64(sl), uint64(fp), uint64(len(restore.FinishedSubtasks))
	}
	in.stack = s
	if err := in.call(fnCoordNew, "coordinator constructor"); err != nil {
		return err
	}
	c.h = uint32(in.stack[0])
	rep, ok := in.rep(c.h)
	if !ok {
		return in.trap("coordinator constructor", fmt.Errorf("it returned the unknown handle %d", c.h))
	}
	c.self = rep
	return nil
}

// Handle is the owned handle the constructor returned (diagnostics).
func (c *Coordinator) Handle() uint32 { return c.h }

// outcomeCall calls id (parameters in the stack) and lifts its
// result<outcome, error>.
func (c *Coordinator) outcomeCall(id fn, what string) (Outcome, error) {
	out, err := resultCall(c.in, id, what, abi.ResultOutcomeErrorPayload, (*lifter).outcome)
	if out.CommittedUpTo != nil {
		c.last = out.CommittedUpTo
	}
	return out, err
}

// resultCall calls id (parameters in the stack) and lifts its
// result<T, error> with lift.
func resultCall[T any](in *instance, id fn, what string, at uint32, lift func(*lifter, uint32) T) (T, error) {
	if err := in.call(id, what); err != nil {
		var zero T
		return zero, err
	}
	return result(in, id, what, at, lift)
}

// valueCall calls id (parameters in the stack) and lifts its result, a
// plain value (no result<_, error>) at ret.
func valueCall[T any](in *instance, id fn, what string, lift func(*lifter, uint32) T) (T, error) {
	var zero T
	if err := in.call(id, what); err != nil {
		return zero, err
	}
	ret := uint32(in.stack[0])
	l := lifter{mem: in.mem}
	v := lift(&l, ret)
	if err := in.finish(id, ret, &l, what); err != nil {
		return zero, err
	}
	return v, nil
}

// result lifts the result<T, error> of the call id just made: the
// discriminant at ret, the payload (T by lift, or the error) at ret + at.
// A malformed result is a trap and yields the zero T.
func result[T any](in *instance, id fn, what string, at uint32, lift func(*lifter, uint32) T) (T, error) {
	ret := uint32(in.stack[0])
	l := lifter{mem: in.mem}
	var v T
	var cerr error
	switch l.u8(ret) {
	case 0:
		v = lift(&l, ret+at)
	case 1:
		cerr = l.callError(ret + at)
	default:
		l.fail("a result at %d has discriminant %d", ret, l.u8(ret))
	}
	if err := in.finish(id, ret, &l, what); err != nil {
		var zero T
		return zero, err
	}
	return v, cerr
}

// finish runs post-return and turns a failed lift into a trap.
func (in *instance) finish(id fn, ret uint32, l *lifter, what string) error {
	if err := in.post(id, ret, what); err != nil {
		return err
	}
	if l.err != nil {
		return in.trap(what, fmt.Errorf("malformed result: %w", l.err))
	}
	return nil
}

func (c *Coordinator) lock() func() {
	c.in.mu.Lock()
	return c.in.mu.Unlock
}

// SetLimits sets the size limits; allowed only before Start.
func (c *Coordinator) SetLimits(limits Limits) error {
	defer c.lock()()
	in := c.in
	in.stack[0], in.stack[1], in.stack[2], in.stack[3] = uint64(c.self), limits.MaxCommittableBytes, limits.MaxEventBytes, limits.MaxSnapshotBytes
	return in.unitCall(fnSetLimits, "set-limits")
}

// unitCall calls id (parameters in the stack) and lifts its
// result<_, error>.
func (in *instance) unitCall(id fn, what string) error {
	_, err := resultCall(in, id, what, abi.ResultErrorPayload, func(*lifter, uint32) struct{} { return struct{}{} })
	return err
}

// Start: created -> running (fresh) or restoring (with a restore point).
func (c *Coordinator) Start() (Outcome, error) {
	defer c.lock()()
	c.in.stack[0] = uint64(c.self)
	return c.outcomeCall(fnStart, "start")
}

// Event is a writer's committable event for one checkpoint (or End).
func (c *Coordinator) Event(subtask, attempt uint32, entry Entry) (Outcome, error) {
	defer c.lock()()
	in := c.in
	if err := in.lowerEntryArgs(4, entry.Committables, entry.Watermark); err != nil {
		return Outcome{}, err
	}
	s := &in.stack
	s[0], s[1], s[2], s[3], s[8] = uint64(c.self), uint64(subtask), uint64(attempt), entry.Checkpoint, b2u64(entry.Savepoint)
	return c.outcomeCall(fnEvent, "event")
}

// EventsPacked applies a batch of events in one crossing, in order, exactly
// as if Event were called for each, stopping at the first error (a
// *BatchError). Each event's committables are one block (PackCommittables).
func (c *Coordinator) EventsPacked(events []PackedEvent) (BatchOutcome, error) {
	defer c.lock()()
	in := c.in
	if !in.rt.has[fnEventsPacked] {
		evs := make([]WriterEvent, len(events))
		for i, e := range events {
			committables, err := UnpackCommittables(e.Committables)
			if err != nil {
				return BatchOutcome{}, fmt.Errorf("sinkcoord: event %d: %w", i, err)
			}
			evs[i] = WriterEvent{e.Subtask, e.Attempt, Entry{e.Checkpoint, committables, e.Watermark, e.Savepoint}}
		}
		return c.events(evs)
	}
	blocks := make([]uint32, 2*len(events))
	for i := range events {
		p, n, err := in.lowerBytes(events[i].Committables)
		if err != nil {
			return BatchOutcome{}, err
		}
		blocks[2*i], blocks[2*i+1] = p, n
	}
	ptr, err := in.lowerArray(len(events), abi.PackedEventSize, abi.PackedEventAlign, func(buf []byte) error {
		for i := range events {
			e, b := &events[i], buf[abi.PackedEventSize*i:abi.PackedEventSize*(i+1)]
			le.PutUint32(b[abi.PackedEventSubtask:], e.Subtask)
			le.PutUint32(b[abi.PackedEventAttempt:], e.Attempt)
			le.PutUint64(b[abi.PackedEventCheckpoint:], e.Checkpoint)
			putList(b[abi.PackedEventCommittables:], blocks[2*i], blocks[2*i+1])
			putOptS64(b[abi.PackedEventWatermark:], e.Watermark)
			b[abi.PackedEventSavepoint] = b2u8(e.Savepoint)
		}
		return nil
	})
	if err != nil {
		return BatchOutcome{}, err
	}
	in.stack[0], in.stack[1], in.stack[2] = uint64(c.self), uint64(ptr), uint64(len(events))
	return c.batchCall(fnEventsPacked, "events-packed")
}

// Events is the batch of WriterEvents: packed and sent as EventsPacked
// (the events call of a 0.2.1 module where that is missing).
func (c *Coordinator) Events(events []WriterEvent) (BatchOutcome, error) {
	if !c.in.rt.has[fnEventsPacked] {
		defer c.lock()()
		return c.events(events)
	}
	packed := make([]PackedEvent, len(events))
	var block []byte
	for i, e := range events {
		start := len(block)
		block = PackCommittables(block, e.Entry.Committables)
		packed[i] = PackedEvent{e.Subtask, e.Attempt, e.Entry.Checkpoint, block[start:len(block):len(block)], e.Entry.Watermark, e.Entry.Savepoint}
	}
	return c.EventsPacked(packed)
}

// events lowers list<writer-event>.
func (c *Coordinator) events(events []WriterEvent) (BatchOutcome, error) {
	in := c.in
	ptr, err := in.lowerArray(len(events), abi.WriterEventSize, abi.WriterEventAlign, func(buf []byte) error {
		for i := range events {
			b := buf[abi.WriterEventSize*i : abi.WriterEventSize*(i+1)]
			le.PutUint32(b[abi.WriterEventSubtask:], events[i].Subtask)
			le.PutUint32(b[abi.WriterEventAttempt:], events[i].Attempt)
			if err := in.lowerEntryInto(b[abi.WriterEventEntry:], &events[i].Entry); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return BatchOutcome{}, err
	}
	in.stack[0], in.stack[1], in.stack[2] = uint64(c.self), uint64(ptr), uint64(len(events))
	return c.batchCall(fnEvents, "events")
}

// batchCall lifts result<batch-outcome, batch-error>.
func (c *Coordinator) batchCall(id fn, what string) (BatchOutcome, error) {
	in := c.in
	if err := in.call(id, what); err != nil {
		return BatchOutcome{}, err
	}
	ret := uint32(in.stack[0])
	l := lifter{mem: in.mem}
	var out BatchOutcome
	var berr *BatchError
	p := ret + abi.ResultBatchOutcomeBatchErrorPayload
	switch l.u8(ret) {
	case 0:
		out = l.batchOutcome(p)
	case 1:
		berr = &BatchError{
			Applied: l.u32(p + abi.BatchErrorApplied), Outcome: l.batchOutcome(p + abi.BatchErrorOutcome),
			Err: l.callError(p + abi.BatchErrorError),
		}
		out = berr.Outcome
	default:
		l.fail("a result at %d has discriminant %d", ret, l.u8(ret))
	}
	if err := in.finish(id, ret, &l, what); err != nil {
		return BatchOutcome{}, err
	}
	if out.CommittedUpTo != nil {
		c.last = out.CommittedUpTo
	}
	if berr != nil {
		return out, berr
	}
	return out, nil
}

// Restored is a writer's replay of its checkpointed buffer after restoring
// from checkpoint.
func (c *Coordinator) Restored(subtask, attempt uint32, checkpoint CheckpointID, entries []Entry) (Outcome, error) {
	defer c.lock()()
	in := c.in
	ptr, err := in.lowerArray(len(entries), abi.EntrySize, abi.EntryAlign, func(buf []byte) error {
		for i := range entries {
			if err := in.lowerEntryInto(buf[abi.EntrySize*i:], &entries[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Outcome{}, err
	}
	s := &in.stack
	s[0], s[1], s[2], s[3], s[4], s[5] = uint64(c.self), uint64(subtask), uint64(attempt), checkpoint, uint64(ptr), uint64(len(entries))
	return c.outcomeCall(fnRestored, "restored")
}

// SubtaskReset is a region failover of one writer, restarting from
// checkpoint (nil: from scratch).
func (c *Coordinator) SubtaskReset(subtask uint32, checkpoint *CheckpointID) (Outcome, error) {
	defer c.lock()()
	s := &c.in.stack
	s[0], s[1], s[2], s[3] = uint64(c.self), uint64(subtask), 0, 0
	if checkpoint != nil {
		s[2], s[3] = 1, *checkpoint
	}
	return c.outcomeCall(fnSubtaskReset, "subtask-reset")
}

// Checkpoint returns the coordinator's state bytes for checkpoint.
func (c *Coordinator) Checkpoint(checkpoint CheckpointID) ([]byte, error) {
	defer c.lock()()
	in := c.in
	in.stack[0], in.stack[1] = uint64(c.self), checkpoint
	return resultCall(in, fnCheckpoint, "checkpoint", abi.ResultListU8ErrorPayload, (*lifter).bytes)
}

// CheckpointComplete: checkpoint completed; commits what it can.
func (c *Coordinator) CheckpointComplete(checkpoint CheckpointID) (Outcome, error) {
	defer c.lock()()
	c.in.stack[0], c.in.stack[1] = uint64(c.self), checkpoint
	return c.outcomeCall(fnComplete, "checkpoint-complete")
}

// CheckpointAborted: checkpoint was aborted.
func (c *Coordinator) CheckpointAborted(checkpoint CheckpointID) (Outcome, error) {
	defer c.lock()()
	c.in.stack[0], c.in.stack[1] = uint64(c.self), checkpoint
	return c.outcomeCall(fnAborted, "checkpoint-aborted")
}

// Close is the WIT close call (the job ends); Free releases the instance.
func (c *Coordinator) Close() (Outcome, error) {
	defer c.lock()()
	c.in.stack[0] = uint64(c.self)
	return c.outcomeCall(fnClose, "close")
}

// State is the current lifecycle state (an error only after a trap).
func (c *Coordinator) State() (Lifecycle, error) {
	defer c.lock()()
	in := c.in
	in.stack[0] = uint64(c.self)
	if err := in.call(fnState, "state"); err != nil {
		return Failed, err
	}
	v := in.stack[0]
	if v >= uint64(len(lifecycleNames)) {
		return Failed, in.trap("state", fmt.Errorf("malformed result: lifecycle %d", v))
	}
	return Lifecycle(v), nil
}

// CommittedUpTo is committed-up-to (SEMANTICS 5.5), answered in every
// state. After a trap it returns the last value received with the trap.
func (c *Coordinator) CommittedUpTo() (*CheckpointID, error) {
	defer c.lock()()
	in := c.in
	in.stack[0] = uint64(c.self)
	v, err := valueCall(in, fnCommittedUpTo, "committed-up-to", (*lifter).optU64)
	if err != nil {
		return c.last, err
	}
	if v != nil {
		c.last = v
	}
	return v, nil
}

// LastCommittedUpTo is the last committed-up-to an outcome or the query
// gave, without a call (what a host forwards after a trap).
func (c *Coordinator) LastCommittedUpTo() *CheckpointID {
	defer c.lock()()
	return c.last
}

// Free drops the coordinator (its destructor) and releases its instance.
// Later calls return a *TrapError.
func (c *Coordinator) Free() {
	defer c.lock()()
	c.in.free(fnCoordDtor, c.h)
}
