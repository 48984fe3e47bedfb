// Package benchjob holds the Go host's benchmarks (testing.B), shared by
// `go test -bench` (bench_test.go) and `make bench`'s table
// (cmd/sinkcoord-go-bench). The realistic job is issue 10's
// (BENCHMARKS.md, testkit/src/perf.rs): P = 256 writers, 4 committables of
// 200 B each per checkpoint, the checkpoint's events as one events-packed
// batch, the coordinator's state taken and the checkpoint completed (one
// snapshot committed) per cycle; entries built before the clock starts;
// in-memory storage keeping the latest snapshots only. Nothing asserts time.
package benchjob

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	sc "github.com/sink-coordinator/sink-coordinator-go"
	"github.com/sink-coordinator/sink-coordinator-go/internal/keys"
)

const (
	Writers      = 256
	Committables = 4
	Bytes        = 200
	keptSnaps    = 4
)

// storage is the Rust bench's BenchStorage: copies every value, keeps the
// latest snapshot records only.
type storage struct {
	items map[string][]byte
	snaps []string
}

func newStorage() *storage { return &storage{items: map[string][]byte{}} }

func (s *storage) Get(key string) ([]byte, bool, error) {
	v, ok := s.items[key]
	return v, ok, nil
}

func (s *storage) PutIfAbsent(key string, value []byte) (bool, error) {
	if _, ok := s.items[key]; ok {
		return false, nil
	}
	s.items[key] = slices.Clone(value)
	if strings.HasPrefix(key, "snapshot/") {
		s.snaps = append(s.snaps, key)
		if len(s.snaps) > keptSnaps {
			delete(s.items, s.snaps[0])
			s.snaps = s.snaps[1:]
		}
	}
	return true, nil
}

func (s *storage) Put(key string, value []byte) error {
	s.items[key] = slices.Clone(value)
	return nil
}

func (s *storage) Delete(key string) error {
	delete(s.items, key)
	return nil
}

func (s *storage) List(prefix string) ([]string, error) {
	return keys.WithPrefix(s.items, prefix), nil
}

// events are writer s's packed events for checkpoint c: distinct 200-byte
// committables and a watermark, as the Rust and Node benches build them.
func events(c uint64) []sc.PackedEvent {
	evs := make([]sc.PackedEvent, Writers)
	for s := range evs {
		var cs [][]byte
		for i := range Committables {
			b := []byte(strings.Repeat("x", Bytes))
			copy(b, fmt.Sprintf("%d/%d/%d", s, c, i))
			cs = append(cs, b)
		}
		evs[s] = sc.PackedEvent{Subtask: uint32(s), Checkpoint: c, Committables: sc.PackCommittables(nil, cs), Watermark: new(int64(c * 1000))}
	}
	return evs
}

// Job is one iteration per checkpoint cycle of the realistic job. It
// reports the cycle per event ("ns/event", the figure compared with
// Rust-wasmtime's job_p256/component) and the events-packed batch alone per
// event ("batch-ns/event", timed with the clock around the call: the
// crossing per batched event next to events_batch_p256/component).
func Job(rt *sc.Runtime) func(b *testing.B) {
	return func(b *testing.B) {
		ctx := context.Background()
		c, err := rt.NewCoordinator(ctx, sc.Config{Parallelism: Writers, CommitUser: "bench", Checkpointing: true}, newStorage(), sc.NewManualClock(0), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Free()
		if _, err := c.Start(); err != nil {
			b.Fatal(err)
		}
		cp := uint64(0)
		var batch time.Duration
		cycle := func(evs []sc.PackedEvent) {
			cp++
			start := time.Now()
			if _, err := c.EventsPacked(evs); err != nil {
				b.Fatal(err)
			}
			batch += time.Since(start)
			if _, err := c.Checkpoint(cp); err != nil {
				b.Fatal(err)
			}
			out, err := c.CheckpointComplete(cp)
			if err != nil || len(out.Committed) != 1 {
				b.Fatalf("checkpoint %d: %+v %v", cp, out, err)
			}
		}
		for range 5 { // warm up
			cycle(events(cp + 1))
		}
		// Two cycles' events built before the clock starts and reused in
		// turn (only the checkpoint numbers change): no allocation of the
		// benchmark's own in the timed loop, and no timer stops (each
		// reads the memory statistics).
		ring := [2][]sc.PackedEvent{events(cp + 1), events(cp + 2)}
		batch = 0
		b.ResetTimer()
		for i := range b.N {
			evs := ring[i%len(ring)]
			for s := range evs {
				evs[s].Checkpoint = cp + 1
			}
			cycle(evs)
		}
		b.StopTimer()
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/Writers, "ns/event")
		b.ReportMetric(float64(batch.Nanoseconds())/float64(b.N)/Writers, "batch-ns/event")
	}
}

// EmptyCall is state(): the smallest round trip.
func EmptyCall(rt *sc.Runtime) func(b *testing.B) {
	return func(b *testing.B) {
		c, err := rt.NewCoordinator(context.Background(), sc.Config{Parallelism: 1, CommitUser: "bench"}, newStorage(), sc.NewManualClock(0), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Free()
		b.ResetTimer()
		for range b.N {
			if _, err := c.State(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// Instantiate is a new instance of the compiled module, its constructor,
// start and Free (what a coordinator costs once the module is compiled;
// mostly wazero allocating and zeroing the instance's linear memory).
func Instantiate(rt *sc.Runtime) func(b *testing.B) {
	return func(b *testing.B) {
		ctx := context.Background()
		cfg := sc.Config{Parallelism: 4, CommitUser: "bench", Checkpointing: true}
		for range b.N {
			c, err := rt.NewCoordinator(ctx, cfg, newStorage(), sc.NewManualClock(0), nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := c.Start(); err != nil {
				b.Fatal(err)
			}
			c.Free() // timed too: a timer stop reads the memory statistics
		}
	}
}

// Compile is a new Runtime from the core module's bytes: with warm, over
// a compilation cache directory that already holds the module (a cache
// hit: wazero loads the machine code), else a fresh cache each time.
func Compile(core []byte, interpreter, warm bool) func(b *testing.B) {
	return func(b *testing.B) {
		ctx := context.Background()
		dir := b.TempDir()
		if warm {
			rt, err := sc.NewRuntime(ctx, core, sc.Options{CacheDir: dir, Interpreter: interpreter})
			if err != nil {
				b.Fatal(err)
			}
			rt.Close(ctx)
		}
		b.ResetTimer()
		for i := range b.N {
			d := dir
			if !warm {
				b.StopTimer()
				d, _ = os.MkdirTemp(dir, fmt.Sprint(i))
				b.StartTimer()
			}
			rt, err := sc.NewRuntime(ctx, core, sc.Options{CacheDir: d, Interpreter: interpreter})
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			rt.Close(ctx)
			b.StartTimer()
		}
	}
}
