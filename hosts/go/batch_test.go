package sinkcoord_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	sc "github.com/sink-coordinator/sink-coordinator-go"
)

// batchCase is a batch decoded from fuzz bytes: a configuration bit and
// events, some of them with malformed committables blocks.
type batchCase struct {
	onEndInput bool
	events     []sc.PackedEvent
}

// decodeBatch turns any bytes into a batch: 6 bytes per event (subtask,
// attempt, checkpoint, flags, two committable lengths); flag bit 0x80 takes
// the next bytes as a raw block, possibly malformed.
func decodeBatch(data []byte) batchCase {
	var bc batchCase
	if len(data) > 0 {
		bc.onEndInput = data[0]&1 == 1
		data = data[1:]
	}
	for len(data) >= 6 && len(bc.events) < 64 {
		b := data[:6]
		data = data[6:]
		e := sc.PackedEvent{Subtask: uint32(b[0] % 3), Attempt: uint32(b[1] % 2), Checkpoint: uint64(b[2] % 5)}
		if b[2] >= 250 {
			e.Checkpoint = sc.End
		}
		if b[3]&1 == 1 {
			e.Watermark = new(int64(int8(b[4])))
		}
		e.Savepoint = b[3]&2 == 2
		if b[3]&0x80 != 0 {
			n := min(int(b[5]%8), len(data))
			e.Committables, data = data[:n:n], data[n:]
		} else {
			var cs [][]byte
			for i := range int(b[3]>>2) % 3 {
				cs = append(cs, []byte(fmt.Sprintf("c%d-%d", b[4+i%2], len(bc.events))))
			}
			e.Committables = sc.PackCommittables(nil, cs)
		}
		bc.events = append(bc.events, e)
	}
	return bc
}

func newBatchCoordinator(t testing.TB, rt *sc.Runtime, onEndInput bool) (*sc.Coordinator, *sc.MemoryStorage) {
	cfg := sc.Config{Parallelism: 3, CommitUser: "job-1", Checkpointing: true}
	if onEndInput {
		cfg.FinalCommit = sc.OnEndInput
	}
	storage := sc.NewMemoryStorage()
	return startedCoordinator(t, rt, cfg, storage, 1000), storage
}

// checkBatch: EventsPacked must do what Event does for each event in turn,
// stopping at the first error: the same merged outcome, the same error at
// the same index, the same table. A malformed block (by the Go decoder) is
// the failing event, a fatal invalid-event; the guest must agree on which
// blocks are malformed. The instance must never trap.
func checkBatch(t testing.TB, rt *sc.Runtime, bc batchCase) {
	batch, batchStorage := newBatchCoordinator(t, rt, bc.onEndInput)
	one, oneStorage := newBatchCoordinator(t, rt, bc.onEndInput)

	got, gotErr := batch.EventsPacked(bc.events)
	var trap *sc.TrapError
	if errors.As(gotErr, &trap) {
		t.Fatalf("events-packed trapped: %v", gotErr)
	}

	var want sc.BatchOutcome
	var wantErr error
	applied := uint32(0)
	effects := sc.BatchEffects{}
	state, err := one.State()
	if err != nil {
		t.Fatal(err)
	}
	want.State = state
	want.CommittedUpTo, _ = one.CommittedUpTo()
	for i, e := range bc.events {
		committables, perr := sc.UnpackCommittables(e.Committables)
		if perr != nil {
			wantErr = &sc.InvalidEventError{Message: "(malformed block)"}
			want.State = sc.Failed
			break
		}
		out, err := one.Event(e.Subtask, e.Attempt, sc.Entry{Checkpoint: e.Checkpoint, Committables: committables, Watermark: e.Watermark, Savepoint: e.Savepoint})
		if errors.As(err, &trap) {
			t.Fatalf("event %d trapped: %v", i, err)
		}
		if err != nil {
			wantErr = err
			want.State, _ = one.State()
			want.CommittedUpTo, _ = one.CommittedUpTo()
			break
		}
		applied++
		want.State, want.CommittedUpTo = out.State, out.CommittedUpTo
		effects.Committed = append(effects.Committed, out.Committed...)
		effects.TagsCreated = append(effects.TagsCreated, out.TagsCreated...)
		effects.TagsDeleted = append(effects.TagsDeleted, out.TagsDeleted...)
		effects.RestartRequired = effects.RestartRequired || out.RestartRequired
	}
	if len(effects.Committed)+len(effects.TagsCreated)+len(effects.TagsDeleted) > 0 || effects.RestartRequired {
		want.Effects = &effects
	}

	var be *sc.BatchError
	switch {
	case wantErr == nil && gotErr != nil:
		t.Fatalf("events-packed failed, the events one by one did not: %v", gotErr)
	case wantErr != nil && !errors.As(gotErr, &be):
		t.Fatalf("the events one by one failed at %d (%v), events-packed returned %v", applied, wantErr, gotErr)
	case wantErr != nil:
		var wantKind, gotKind sc.CoordinatorError
		errors.As(wantErr, &wantKind)
		errors.As(be.Err, &gotKind)
		if be.Applied != applied || gotKind == nil || gotKind.Kind() != wantKind.Kind() {
			t.Fatalf("events-packed stopped at %d with %v, one by one at %d with %v", be.Applied, be.Err, applied, wantErr)
		}
		if wantKind.Detail() != "(malformed block)" && gotKind.Detail() != wantKind.Detail() {
			t.Fatalf("messages differ: %q, %q", gotKind.Detail(), wantKind.Detail())
		}
		if wantKind.Detail() == "(malformed block)" {
			want.CommittedUpTo = got.CommittedUpTo // not observable one by one
		}
	}
	if !reflect.DeepEqual(normal(got), normal(want)) {
		t.Fatalf("merged outcome %+v, one by one %+v", show(got), show(want))
	}
	if !slices.Equal(batchStorage.Keys(), oneStorage.Keys()) {
		t.Fatalf("tables differ: %v, %v", batchStorage.Keys(), oneStorage.Keys())
	}
}

// normal makes nil and empty lists equal.
func normal(o sc.BatchOutcome) sc.BatchOutcome {
	if o.Effects != nil {
		e := *o.Effects
		for _, l := range []*[]string{&e.TagsCreated, &e.TagsDeleted} {
			if len(*l) == 0 {
				*l = nil
			}
		}
		if len(e.Committed) == 0 {
			e.Committed = nil
		}
		o.Effects = &e
	}
	return o
}

func show(o sc.BatchOutcome) string {
	s := fmt.Sprintf("{%v", o.State)
	if o.CommittedUpTo != nil {
		s += fmt.Sprintf(" cut=%d", *o.CommittedUpTo)
	}
	if o.Effects != nil {
		s += fmt.Sprintf(" effects=%+v", *o.Effects)
	}
	return s + "}"
}

// TestBatchMatchesEvents: fixed batches through checkBatch (the fuzz
// target FuzzBatch explores more; its corpus replays in FuzzBatch).
func TestBatchMatchesEvents(t *testing.T) {
	rt := runtime(t)
	cases := [][]byte{
		{},
		{0, 0, 0, 1, 0x05, 1, 2, 1, 0, 1, 0x05, 3, 4},                         // two subtasks, one checkpoint
		{1, 0, 0, 250, 0x04, 1, 2, 1, 0, 250, 0x04, 3, 4, 2, 0, 250, 0, 0, 0}, // END from all: final commit in the batch
		{0, 0, 0, 1, 0x80, 0, 3, 0xff, 0xff, 0xff},                            // a malformed block
		{0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0, 0, 0},                               // a checkpoint going backwards
		{0, 7, 0, 1, 0, 0, 0},                                                 // subtask 7 % 3
	}
	for i, data := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkBatch(t, rt, decodeBatch(data)) })
	}
}

// FuzzBatch: any batch gives the merged outcome of its events one by one.
func FuzzBatch(f *testing.F) {
	rt := runtime(f)
	f.Add([]byte{1, 0, 0, 250, 0x04, 1, 2, 1, 0, 250, 0x04, 3, 4, 2, 0, 250, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) { checkBatch(t, rt, decodeBatch(data)) })
}

// TestPackRoundTrip: the Go block encoder and decoder agree, and the
// decoder refuses what the WIT calls malformed.
func TestPackRoundTrip(t *testing.T) {
	cs := [][]byte{{}, []byte("a"), make([]byte, 300)}
	got, err := sc.UnpackCommittables(sc.PackCommittables(nil, cs))
	if err != nil || len(got) != 3 || len(got[2]) != 300 {
		t.Fatalf("round trip: %v %v", got, err)
	}
	for _, bad := range [][]byte{{}, {1}, {0, 0}, {0x80, 0}, {1, 0x81, 0}, {2, 0}, {0xff, 0xff, 0xff, 0xff, 0x7f}} {
		if _, err := sc.UnpackCommittables(bad); !errors.Is(err, sc.ErrMalformedBlock) {
			t.Errorf("%x: %v", bad, err)
		}
	}
}
