// Command pipeline is a small streaming job on the sink coordinator: N
// writer goroutines write part files, a job-manager goroutine runs
// checkpoints, one writer crashes in the middle of a checkpoint and is
// restarted from its last checkpointed state, and the coordinator commits
// every part file of the job exactly once to a table in a local directory.
//
//	go run ./examples/pipeline -core ../../dist/sink-coordinator-0.2.3.core.wasm
//
// It prints the table's snapshots and exits 1 if a file was committed
// twice, a committed file is missing, or the crashed attempt's file
// (written, never reported) was committed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	sc "github.com/sink-coordinator/sink-coordinator-go"
)

// Options of one run.
type Options struct {
	Core        string // the core module
	Dir         string // table/ and data/ go here
	Writers     int
	Checkpoints int
	CrashAt     uint64 // writer 1 crashes at this checkpoint
}

// barrier asks a writer to checkpoint (or, with end, to end its input).
type barrier struct {
	checkpoint uint64
	end        bool
}

// ack is what a writer sends to the job manager at a barrier: its event
// and its checkpointed state (what Flink keeps in the checkpoint).
type ack struct {
	subtask, attempt uint32
	entry            sc.Entry
	state            []byte
	crashed          bool
	restored         []sc.Entry
}

// restoreFrom is a restarted writer's checkpointed state.
type restoreFrom struct {
	checkpoint uint64
	state      []byte
}

// writer is one writer goroutine: it writes part files and keeps the
// writer helper's buffer (sc.Writer) in its checkpointed state.
type writer struct {
	rt        *sc.Runtime
	subtask   uint32
	attempt   uint32
	dataDir   string
	crashAt   uint64
	barriers  chan barrier
	committed chan uint64
	acks      chan<- ack
}

func (w *writer) run(ctx context.Context, restore *restoreFrom) error {
	h, err := w.rt.NewWriter(ctx, w.subtask, nil, nil)
	if err != nil {
		return err
	}
	defer h.Free()
	if restore != nil {
		// A restarted writer restores its buffer from its checkpointed
		// state and sends the single restored event: every entry not yet
		// known committed (the coordinator drops what it already has).
		entries, err := h.Restore(restore.state, restore.checkpoint)
		if err != nil {
			return err
		}
		w.acks <- ack{subtask: w.subtask, attempt: w.attempt, restored: entries}
	}
	records := 0
	for {
		select {
		case cut := <-w.committed:
			if err := h.Committed(cut); err != nil {
				return err
			}
		case b, ok := <-w.barriers:
			if !ok {
				return nil
			}
			// The records since the last barrier, as one part file.
			name := fmt.Sprintf("part-%d-%d-%d.txt", w.subtask, w.attempt, b.checkpoint)
			var lines []string
			for range 3 {
				records++
				lines = append(lines, fmt.Sprintf("subtask %d record %d", w.subtask, records))
			}
			if err := os.WriteFile(filepath.Join(w.dataDir, name), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
				return err
			}
			var entry sc.Entry
			if b.end {
				entry, err = h.EndInput([][]byte{[]byte(name)}, nil)
			} else {
				entry, err = h.Report(b.checkpoint, [][]byte{[]byte(name)}, new(int64(b.checkpoint)), false)
			}
			if err != nil {
				return err
			}
			if w.subtask == 1 && w.attempt == 0 && b.checkpoint == w.crashAt {
				// Crash: the file is written, the event never sent.
				w.acks <- ack{subtask: w.subtask, attempt: w.attempt, crashed: true}
				return nil
			}
			state, err := h.State()
			if err != nil {
				return err
			}
			w.acks <- ack{subtask: w.subtask, attempt: w.attempt, entry: entry, state: state}
		}
	}
}

// Run runs the job and checks the table; it returns the committed files.
func Run(ctx context.Context, o Options) ([]string, error) {
	rt, err := sc.LoadRuntime(ctx, o.Core, sc.Options{CacheDir: filepath.Join(o.Dir, "cache")})
	if err != nil {
		return nil, err
	}
	defer rt.Close(ctx)
	dataDir := filepath.Join(o.Dir, "data")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	table, err := sc.OpenDirectoryStorage(filepath.Join(o.Dir, "table"))
	if err != nil {
		return nil, err
	}
	defer table.Close()
	cfg := sc.Config{Parallelism: uint32(o.Writers), CommitUser: "pipeline", Checkpointing: true}
	coord, err := rt.NewCoordinator(ctx, cfg, table, sc.SystemClock{}, nil)
	if err != nil {
		return nil, err
	}
	defer coord.Free()
	if _, err := coord.Start(); err != nil {
		return nil, err
	}

	acks := make(chan ack)
	errs := make(chan error, o.Writers+1)
	writers := make([]*writer, o.Writers)
	started := 0
	start := func(w *writer, restore *restoreFrom) {
		started++
		go func() { errs <- w.run(ctx, restore) }()
	}
	for i := range writers {
		writers[i] = &writer{rt: rt, subtask: uint32(i), dataDir: dataDir, crashAt: o.CrashAt,
			barriers: make(chan barrier, 1), committed: make(chan uint64, 4), acks: acks}
		start(writers[i], nil)
	}
	states := map[uint64]map[uint32][]byte{} // checkpointed writer states
	lastComplete := uint64(0)
	forward := func(out sc.Outcome) {
		if out.CommittedUpTo != nil {
			for _, w := range writers {
				w.committed <- *out.CommittedUpTo
			}
		}
	}
	for cp := uint64(1); cp <= uint64(o.Checkpoints)+1; cp++ {
		end := cp == uint64(o.Checkpoints)+1
		for _, w := range writers {
			w.barriers <- barrier{checkpoint: cp, end: end}
		}
		var batch []sc.WriterEvent
		crashed := false
		states[cp] = map[uint32][]byte{}
		for range writers {
			a := <-acks
			if a.crashed {
				crashed = true
				continue
			}
			batch = append(batch, sc.WriterEvent{Subtask: a.subtask, Attempt: a.attempt, Entry: a.entry})
			states[cp][a.subtask] = a.state
		}
		// The events of this checkpoint in one crossing.
		if _, err := coord.Events(batch); err != nil {
			return nil, fmt.Errorf("checkpoint %d: %w", cp, err)
		}
		if crashed {
			// Region failover of writer 1: the checkpoint is aborted, the
			// writer restarts from the last completed checkpoint's state.
			if _, err := coord.CheckpointAborted(cp); err != nil {
				return nil, err
			}
			var from *uint64
			var restore *restoreFrom
			if lastComplete > 0 {
				from = new(lastComplete)
				restore = &restoreFrom{lastComplete, states[lastComplete][1]}
			}
			if _, err := coord.SubtaskReset(1, from); err != nil {
				return nil, err
			}
			w := &writer{rt: rt, subtask: 1, attempt: writers[1].attempt + 1, dataDir: dataDir,
				barriers: make(chan barrier, 1), committed: make(chan uint64, 4), acks: acks}
			writers[1] = w
			start(w, restore)
			if restore != nil {
				a := <-acks
				out, err := coord.Restored(1, w.attempt, restore.checkpoint, a.restored)
				if err != nil {
					return nil, fmt.Errorf("restored: %w", err)
				}
				forward(out)
			}
			// Writer 1 re-runs this checkpoint's data in its next file.
			continue
		}
		if _, err := coord.Checkpoint(cp); err != nil {
			return nil, err
		}
		out, err := coord.CheckpointComplete(cp)
		if err != nil {
			return nil, fmt.Errorf("complete %d: %w", cp, err)
		}
		lastComplete = cp
		forward(out)
	}
	if _, err := coord.Close(); err != nil {
		return nil, err
	}
	for _, w := range writers {
		close(w.barriers)
	}
	for range started {
		if err := <-errs; err != nil {
			return nil, err
		}
	}
	return check(ctx, rt, table, dataDir, fmt.Sprintf("part-1-0-%d.txt", o.CrashAt))
}

// check: every committed file exists and is committed once, every part
// file is committed except the crashed attempt's (written, never reported).
func check(ctx context.Context, rt *sc.Runtime, storage sc.Storage, dataDir string, crashFile string) ([]string, error) {
	t, err := rt.NewTable(ctx, storage, sc.SystemClock{})
	if err != nil {
		return nil, err
	}
	defer t.Free()
	snaps, err := t.ListSnapshots()
	if err != nil {
		return nil, err
	}
	seen := map[string]int{}
	var committed, problems []string
	for _, s := range snaps {
		fmt.Printf("snapshot %d (checkpoint %s): %d files\n", s.ID, checkpointName(s.Identifier), len(s.Committables))
		for _, c := range s.Committables {
			name := string(c.Bytes)
			if seen[name]++; seen[name] == 2 {
				problems = append(problems, name+" committed twice")
			}
			if _, err := os.Stat(filepath.Join(dataDir, name)); err != nil {
				problems = append(problems, name+" committed but missing")
			}
			committed = append(committed, name)
		}
	}
	files, err := os.ReadDir(dataDir)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		switch n := seen[f.Name()]; {
		case f.Name() == crashFile && n > 0:
			problems = append(problems, crashFile+" (the crashed attempt's) was committed")
		case f.Name() != crashFile && n == 0:
			problems = append(problems, f.Name()+" was never committed")
		}
	}
	sort.Strings(committed)
	fmt.Printf("%d part files committed exactly once; %s (written by the crashed attempt) not committed\n", len(committed), crashFile)
	if len(problems) > 0 {
		sort.Strings(problems)
		return committed, errors.New(strings.Join(problems, "; "))
	}
	return committed, nil
}

func checkpointName(id uint64) string {
	if id == sc.End {
		return "END"
	}
	return fmt.Sprint(id)
}

func main() {
	o := Options{Writers: 4, Checkpoints: 6, CrashAt: 3}
	flag.StringVar(&o.Core, "core", os.Getenv("SINK_COORDINATOR_CORE_WASM"), "the core module (dist/sink-coordinator-<version>.core.wasm)")
	flag.StringVar(&o.Dir, "dir", "", "where table/ and data/ go (default: a new temporary directory)")
	flag.IntVar(&o.Writers, "writers", o.Writers, "writer goroutines")
	flag.IntVar(&o.Checkpoints, "checkpoints", o.Checkpoints, "checkpoints before the end of input")
	flag.Parse()
	if o.Core == "" {
		fmt.Fprintln(os.Stderr, "pipeline: give -core CORE.wasm (or $SINK_COORDINATOR_CORE_WASM)")
		os.Exit(2)
	}
	if o.Dir == "" {
		d, err := os.MkdirTemp("", "sinkcoord-pipeline-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "pipeline:", err)
			os.Exit(1)
		}
		defer os.RemoveAll(d)
		o.Dir = d
	}
	if _, err := Run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "pipeline:", err)
		os.Exit(1)
	}
}
