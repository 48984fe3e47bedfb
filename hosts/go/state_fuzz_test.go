package sinkcoord_test

import (
	"errors"
	"reflect"
	"testing"

	sc "github.com/sink-coordinator/sink-coordinator-go"
)

// checkState feeds state bytes to the two decoders in the guest: the
// coordinator's (a restore point, then start and a checkpoint) and the
// writer's (restore). Any bytes must give a result or a call error, never
// a trap; a writer restored from its own state bytes replays the same
// entries.
func checkState(t testing.TB, rt *sc.Runtime, state []byte, checkpoint uint64, finished bool) {
	var trap *sc.TrapError
	restore := &sc.RestorePoint{Checkpoint: checkpoint % 8, State: state}
	if finished {
		restore.FinishedSubtasks = []uint32{1}
	}
	cfg := sc.Config{Parallelism: 2, CommitUser: "job-1", Checkpointing: true}
	c := newCoordinator(t, rt, cfg, sc.NewMemoryStorage(), 1000, restore)
	if _, err := c.Start(); errors.As(err, &trap) {
		t.Fatalf("start trapped: %v", err)
	}
	if _, err := c.Checkpoint(checkpoint%8 + 1); errors.As(err, &trap) {
		t.Fatalf("checkpoint trapped: %v", err)
	}
	if _, err := c.State(); err != nil {
		t.Fatal(err)
	}

	w := newWriter(t, rt)
	entries, err := w.Restore(state, checkpoint)
	if errors.As(err, &trap) {
		t.Fatalf("writer restore trapped: %v", err)
	}
	if err != nil {
		return
	}
	again, err := w.State()
	if err != nil {
		t.Fatal(err)
	}
	entries2, err := newWriter(t, rt).Restore(again, checkpoint)
	if err != nil || !reflect.DeepEqual(entries, entries2) {
		t.Fatalf("a writer restored from its own state replays %v (%v), not %v", entries2, err, entries)
	}
}

// FuzzStateDecode: the coordinator's and the writer's state decoders on
// any bytes (seed corpus: testdata/fuzz/FuzzStateDecode, real states of the
// conformance traces, both format versions).
func FuzzStateDecode(f *testing.F) {
	rt := runtime(f)
	f.Add([]byte{0x02, 0x05, 'j', 'o', 'b', '-', '1', 0x02, 0x00}, uint64(2), false)
	f.Fuzz(func(t *testing.T, state []byte, checkpoint uint64, finished bool) {
		checkState(t, rt, state, checkpoint, finished)
	})
}
