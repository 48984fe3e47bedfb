package sinkcoord_test

import (
	"context"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	sc "github.com/sink-coordinator/sink-coordinator-go"
)

// TestRawABIChecks: the checks of hosts/raw-abi/example.mjs through the
// typed API (constructor, start, events, a commit, committed-up-to, a
// table read, the state bytes, an error, a writer).
func TestRawABIChecks(t *testing.T) {
	ctx := context.Background()
	rt := runtime(t)
	storage := sc.NewMemoryStorage()
	c, err := rt.NewCoordinator(ctx, sc.Config{Parallelism: 2, CommitUser: "job-1", Checkpointing: true}, storage, sc.NewManualClock(1000), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free()
	if s, err := c.State(); s != sc.Created || err != nil {
		t.Fatalf("state %v %v", s, err)
	}
	if out, err := c.Start(); err != nil || out.State != sc.Running || out.CommittedUpTo != nil {
		t.Fatalf("start: %+v %v", out, err)
	}
	for i, v := range []string{"v1", "v2"} {
		out, err := c.Event(uint32(i), 0, sc.Entry{Checkpoint: 1, Committables: [][]byte{[]byte(v)}, Watermark: new(int64(100 * (i + 1)))})
		if err != nil || out.State != sc.Running || len(out.Committed) != 0 {
			t.Fatalf("event %d: %+v %v", i, out, err)
		}
	}
	out, err := c.CheckpointComplete(1)
	if err != nil || !slices.Equal(out.Committed, []uint64{1}) || out.CommittedUpTo == nil || *out.CommittedUpTo != 1 {
		t.Fatalf("checkpoint-complete: %+v %v", out, err)
	}
	if cut, err := c.CommittedUpTo(); err != nil || cut == nil || *cut != 1 {
		t.Fatalf("committed-up-to: %v %v", cut, err)
	}
	table, err := rt.NewTable(ctx, storage, sc.NewManualClock(1000))
	if err != nil {
		t.Fatal(err)
	}
	defer table.Free()
	snap, err := table.SnapshotByID(1)
	want := &sc.Snapshot{ID: 1, CommitUser: "job-1", Identifier: 1, Watermark: new(int64(100)), TimeMs: 1000,
		Committables: []sc.Committable{{0, []byte("v1")}, {1, []byte("v2")}}}
	if err != nil || !reflect.DeepEqual(snap, want) {
		t.Fatalf("snapshot-by-id: %+v %v", snap, err)
	}
	state, err := c.Checkpoint(2)
	if err != nil || hex.EncodeToString(state) != "02056a6f622d310200" {
		t.Fatalf("checkpoint(2): %x %v", state, err)
	}
	_, err = c.Event(5, 0, sc.Entry{Checkpoint: 2})
	var invalid *sc.InvalidEventError
	var ce sc.CoordinatorError
	if !errors.As(err, &invalid) || invalid.Message != "event: subtask 5 is outside parallelism 2" ||
		!errors.As(err, &ce) || ce.Kind() != sc.KindInvalidEvent || ce.Kind().String() != "invalid-event" {
		t.Fatalf("event(5): %v", err)
	}
	if s, _ := c.State(); s != sc.Failed {
		t.Fatalf("state after a fatal error: %v", s)
	}
	if keys := storage.Keys(); !slices.Equal(keys, []string{"hint/latest-snapshot", "snapshot/00000000000000000001"}) {
		t.Fatalf("keys %v", keys)
	}

	w, err := rt.NewWriter(ctx, 0, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Free()
	entry1 := sc.Entry{Checkpoint: 1, Committables: [][]byte{[]byte("v1")}, Watermark: new(int64(100))}
	if e, err := w.Report(1, [][]byte{[]byte("v1")}, new(int64(100)), false); err != nil || !reflect.DeepEqual(e, entry1) {
		t.Fatalf("report: %+v %v", e, err)
	}
	before, _ := w.State()
	if err := w.Committed(1); err != nil {
		t.Fatal(err)
	}
	after, _ := w.State()
	for _, tc := range []struct {
		state []byte
		want  []sc.Entry
	}{{before, []sc.Entry{entry1}}, {after, []sc.Entry{}}} {
		w2, _ := rt.NewWriter(ctx, 0, nil, nil)
		got, err := w2.Restore(tc.state, 1)
		w2.Free()
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Fatalf("restore(%x): %+v %v", tc.state, got, err)
		}
	}
}

// largestCoreModule is a test fixture only: the core module of an old
// component that has no .core.wasm artifact (0.1.0).
func largestCoreModule(c []byte) []byte {
	var best []byte
	for pos := 8; pos < len(c); {
		id := c[pos]
		pos++
		size, shift := 0, 0
		for {
			b := c[pos]
			pos++
			size |= int(b&0x7f) << shift
			shift += 7
			if b&0x80 == 0 {
				break
			}
		}
		if id == 1 && size > len(best) {
			best = c[pos : pos+size]
		}
		pos += size
	}
	return best
}

// TestVersionCheck: a 0.1.0 module is refused at load with the message of
// every host; garbage is refused as not a module.
func TestVersionCheck(t *testing.T) {
	ctx := context.Background()
	old, err := os.ReadFile(filepath.Join(repo, "dist", "sink-coordinator-0.1.0.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = sc.NewRuntime(ctx, largestCoreModule(old), sc.Options{})
	var ic *sc.IncompatibleComponentError
	const msg = "incompatible component: this host runs sink:coordinator >=0.2.1, <0.3.0, the component is sink:coordinator@0.1.0"
	if !errors.As(err, &ic) || err.Error() != msg || !slices.Equal(ic.Found, []string{"0.1.0"}) {
		t.Fatalf("got %v", err)
	}
	if _, err := sc.NewRuntime(ctx, []byte("not wasm"), sc.Options{}); err == nil {
		t.Fatal("garbage compiled")
	}
	if v := runtime(t).Version(); v != witVersion(t) {
		t.Fatalf("version %s, the WIT says %s", v, witVersion(t))
	}
}

// panicky is a storage whose Get panics: the call traps, and the instance
// refuses every later call (never re-entered after a trap).
type panicky struct{ *sc.MemoryStorage }

func (panicky) Get(string) ([]byte, bool, error) { panic("backend exploded") }

func TestTrapDiscardsTheInstance(t *testing.T) {
	c := startedCoordinator(t, runtime(t), sc.Config{Parallelism: 1, CommitUser: "job-1", Checkpointing: true}, panicky{sc.NewMemoryStorage()}, 1)
	_, err := c.Event(0, 0, sc.Entry{Checkpoint: 1, Committables: [][]byte{[]byte("a")}})
	var trap *sc.TrapError
	if !errors.As(err, &trap) {
		// The first event reads the table (hint, snapshot) to resume.
		t.Fatalf("event: %v", err)
	}
	if _, err := c.State(); !errors.As(err, &trap) {
		t.Fatalf("state after a trap: %v", err)
	}
	if cut, err := c.CommittedUpTo(); cut != nil || !errors.As(err, &trap) {
		t.Fatalf("committed-up-to after a trap: %v %v", cut, err)
	}
}

// failing returns a *BackendIOError from PutIfAbsent: the component turns
// it into a storage error (not fatal), and repeating the call is safe.
type failing struct {
	*sc.MemoryStorage
	fail bool
}

func (f *failing) PutIfAbsent(key string, value []byte) (bool, error) {
	if f.fail {
		return false, &sc.BackendIOError{Message: "disk full"}
	}
	return f.MemoryStorage.PutIfAbsent(key, value)
}

func TestStorageErrorIsRetryable(t *testing.T) {
	storage := &failing{sc.NewMemoryStorage(), true}
	c := newCoordinator(t, runtime(t), sc.Config{Parallelism: 1, CommitUser: "job-1", Checkpointing: true}, storage, 1, nil)
	c.Start()
	c.Event(0, 0, sc.Entry{Checkpoint: 1, Committables: [][]byte{[]byte("a")}})
	_, err := c.CheckpointComplete(1)
	var se *sc.StorageError
	if !errors.As(err, &se) {
		t.Fatalf("complete with a failing storage: %v", err)
	}
	storage.fail = false
	if out, err := c.CheckpointComplete(1); err != nil || !slices.Equal(out.Committed, []uint64{1}) {
		t.Fatalf("retry: %+v %v", out, err)
	}
}

// TestCompilationCache: a second Runtime over the same cache directory
// loads the compiled code (wazero writes one file per module).
func TestCompilationCache(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for range 2 {
		rt, err := sc.LoadRuntime(ctx, corePath(t), sc.Options{CacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		rt.Close(ctx)
	}
	var files int
	filepath.Walk(dir, func(_ string, info os.FileInfo, _ error) error {
		if info != nil && !info.IsDir() {
			files++
		}
		return nil
	})
	if files == 0 {
		t.Fatal("the compilation cache directory is empty")
	}
}
