package sinkcoord_test

// A directory table that starts failing mid-run (issue 26: "mid-run storage
// failure tested natively only"): after two commits every storage call
// fails, and the coordinator's call is a typed *StorageError (the handle
// stays usable); once the storage is back the same call commits. Then a
// create-once that lands but reports an error (an ambiguous write: the
// answer was lost) is resolved by the retry without a duplicate.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	sc "github.com/sink-coordinator/sink-coordinator-go"
)

// flaky fails every call while down, or applies one create and then fails
// (loseAck).
type flaky struct {
	inner    sc.Storage
	down     bool
	loseAck  bool
	failures int
}

func (f *flaky) fail(op, key string) error {
	f.failures++
	return &sc.BackendIOError{Message: fmt.Sprintf("storage down: %s %s", op, key)}
}

func (f *flaky) Get(key string) ([]byte, bool, error) {
	if f.down {
		return nil, false, f.fail("get", key)
	}
	return f.inner.Get(key)
}

func (f *flaky) PutIfAbsent(key string, value []byte) (bool, error) {
	if f.down {
		return false, f.fail("put-if-absent", key)
	}
	created, err := f.inner.PutIfAbsent(key, value)
	if err == nil && f.loseAck {
		f.loseAck = false
		f.failures++
		return false, &sc.BackendIOError{Message: "connection lost after put-if-absent " + key + " was applied"}
	}
	return created, err
}

func (f *flaky) Put(key string, value []byte) error {
	if f.down {
		return f.fail("put", key)
	}
	return f.inner.Put(key, value)
}

func (f *flaky) Delete(key string) error {
	if f.down {
		return f.fail("delete", key)
	}
	return f.inner.Delete(key)
}

func (f *flaky) List(prefix string) ([]string, error) {
	if f.down {
		return nil, f.fail("list", prefix)
	}
	return f.inner.List(prefix)
}

func TestDirectoryStorageFailingMidRun(t *testing.T) {
	_, d := openDirectory(t)
	storage := &flaky{inner: d}
	c := startedCoordinator(t, runtime(t), sc.Config{Parallelism: 1, CommitUser: "job-1", Checkpointing: true}, storage, 7)
	prepare := func(cp uint64) {
		t.Helper()
		if _, err := c.Event(0, 0, sc.Entry{Checkpoint: cp, Committables: [][]byte{[]byte(fmt.Sprint("c", cp))}}); err != nil {
			t.Fatalf("event %d: %v", cp, err)
		}
		if _, err := c.Checkpoint(cp); err != nil {
			t.Fatalf("checkpoint %d: %v", cp, err)
		}
	}
	complete := func(cp uint64, want []uint64) {
		t.Helper()
		out, err := c.CheckpointComplete(cp)
		if err != nil || !slices.Equal(out.Committed, want) {
			t.Fatalf("complete %d: %v %v, want %v", cp, out.Committed, err, want)
		}
	}
	prepare(1)
	complete(1, []uint64{1})
	prepare(2)
	complete(2, []uint64{2})

	// The storage goes down mid-run: a typed, retryable error, not a trap.
	prepare(3)
	storage.down = true
	for range 2 {
		_, err := c.CheckpointComplete(3)
		var se *sc.StorageError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), "storage down") {
			t.Fatalf("complete with the storage down: %v", err)
		}
	}
	storage.down = false
	complete(3, []uint64{3})

	// A create that lands but answers with an error: the retry finds its own commit.
	prepare(4)
	storage.loseAck = true
	if _, err := c.CheckpointComplete(4); !errors.As(err, new(*sc.StorageError)) {
		t.Fatalf("complete with a lost answer: %v", err)
	}
	if _, err := c.CheckpointComplete(4); err != nil {
		t.Fatalf("retry after a lost answer: %v", err)
	}
	prepare(5)
	complete(5, []uint64{5})
	if storage.failures < 3 {
		t.Fatalf("%d storage failures injected", storage.failures)
	}

	table, err := runtime(t).NewTable(context.Background(), d, sc.NewManualClock(7))
	if err != nil {
		t.Fatal(err)
	}
	defer table.Free()
	snapshots, err := table.ListSnapshots()
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	for _, s := range snapshots {
		ids = append(ids, s.Identifier)
	}
	if !slices.Equal(ids, []uint64{1, 2, 3, 4, 5}) {
		t.Fatalf("snapshots %v, want each of 1..5 once", ids)
	}
}
