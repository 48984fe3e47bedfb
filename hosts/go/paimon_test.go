package sinkcoord_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sc "github.com/sink-coordinator/sink-coordinator-go"
	"github.com/sink-coordinator/sink-coordinator-go/internal/script"
)

// goldenJob is tests/paimon/golden/two-checkpoints.json, written by the
// native core (guest/tests/paimon_golden.rs).
type goldenJob struct {
	Format string `json:"format"`
	Config struct {
		Parallelism      uint32 `json:"parallelism"`
		CommitUser       string `json:"commit-user"`
		SavepointAutoTag bool   `json:"savepoint-auto-tag"`
	} `json:"config"`
	ClockMs uint64 `json:"clock-ms"`
	Schema  struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	} `json:"schema"`
	Steps []struct {
		Call         string   `json:"call"`
		Subtask      uint32   `json:"subtask"`
		Attempt      uint32   `json:"attempt"`
		Checkpoint   uint64   `json:"checkpoint"`
		Committables []string `json:"committables"`
		Watermark    *int64   `json:"watermark"`
		Savepoint    bool     `json:"savepoint"`
		Committed    []uint64 `json:"committed"`
		TagsCreated  []string `json:"tags-created"`
	} `json:"steps"`
	Table map[string]string `json:"table"`
}

func readGolden(t *testing.T) goldenJob {
	t.Helper()
	path := filepath.Join(repo, "tests", "paimon", "golden", "two-checkpoints.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g goldenJob
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return g
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("hex %q: %v", s, err)
	}
	return b
}

// paimonCoordinator: a coordinator on rt over storage with schema/schema-0
// (the golden schema), its format set to Paimon.
func paimonCoordinator(t *testing.T, rt *sc.Runtime, g goldenJob, storage *sc.MemoryStorage) *sc.Coordinator {
	t.Helper()
	if _, err := storage.PutIfAbsent(g.Schema.Key, unhex(t, g.Schema.Value)); err != nil {
		t.Fatal(err)
	}
	cfg := sc.Config{Parallelism: g.Config.Parallelism, CommitUser: g.Config.CommitUser, Checkpointing: true, SavepointAutoTag: g.Config.SavepointAutoTag}
	c := newCoordinator(t, rt, cfg, storage, g.ClockMs, nil)
	if err := c.SetTableFormat(sc.TableFormatPaimon); err != nil {
		t.Fatalf("set-table-format paimon: %v", err)
	}
	return c
}

// TestPaimonGolden: the golden job through this package on the 0.2.10 core
// module leaves the native core's table, key for key, byte for byte: its
// events one Event call each, and each checkpoint's events as one batch
// (Events: events-packed, whose committables cross as one block).
func TestPaimonGolden(t *testing.T) {
	for _, batched := range []bool{false, true} {
		name := map[bool]string{false: "event", true: "events-packed"}[batched]
		t.Run(name, func(t *testing.T) { goldenJobRun(t, batched) })
	}
}

func goldenJobRun(t *testing.T, batched bool) {
	g := readGolden(t)
	if g.Format != "paimon" {
		t.Fatalf("format %q", g.Format)
	}
	storage := sc.NewMemoryStorage()
	c := paimonCoordinator(t, runtime(t), g, storage)
	var batch []sc.WriterEvent
	for i, s := range g.Steps {
		switch s.Call {
		case "start":
			if _, err := c.Start(); err != nil {
				t.Fatalf("step %d: start: %v", i, err)
			}
		case "event":
			committables := make([][]byte, len(s.Committables))
			for j, h := range s.Committables {
				committables[j] = unhex(t, h)
			}
			entry := sc.Entry{Checkpoint: s.Checkpoint, Committables: committables, Watermark: s.Watermark, Savepoint: s.Savepoint}
			if batched {
				batch = append(batch, sc.WriterEvent{Subtask: s.Subtask, Attempt: s.Attempt, Entry: entry})
			} else if _, err := c.Event(s.Subtask, s.Attempt, entry); err != nil {
				t.Fatalf("step %d: event: %v", i, err)
			}
		case "checkpoint-complete":
			if len(batch) > 0 {
				if _, err := c.Events(batch); err != nil {
					t.Fatalf("step %d: the events before it: %v", i, err)
				}
				batch = nil
			}
			out, err := c.CheckpointComplete(s.Checkpoint)
			if err != nil {
				t.Fatalf("step %d: checkpoint-complete: %v", i, err)
			}
			if !slices.Equal(out.Committed, s.Committed) || !slices.Equal(out.TagsCreated, s.TagsCreated) {
				t.Fatalf("step %d: checkpoint-complete(%d): committed %v tags %v, golden %v %v", i, s.Checkpoint, out.Committed, out.TagsCreated, s.Committed, s.TagsCreated)
			}
		default:
			t.Fatalf("step %d: unknown call %q", i, s.Call)
		}
	}
	keys := storage.Keys()
	for _, k := range keys {
		v, _, _ := storage.Get(k)
		want, ok := g.Table[k]
		if !ok {
			t.Errorf("%s: not in the golden table", k)
		} else if got := hex.EncodeToString(v); got != want {
			at := 0
			for at < len(got) && at < len(want) && got[at] == want[at] {
				at++
			}
			t.Errorf("%s: %d bytes, the golden table's %d; they differ from byte %d", k, len(v), len(want)/2, at/2)
		}
	}
	for k := range g.Table {
		if !slices.Contains(keys, k) {
			t.Errorf("%s: missing (the golden table has it)", k)
		}
	}
}

const noSetTableFormat = "table-format paimon: the component has no set-table-format (it needs WIT 0.2.5 or later)"

// TestPaimonOnAnOlderModule: a 0.2.4 core module has no set-table-format:
// native needs no call, Paimon is an invalid-config that leaves the
// coordinator usable.
func TestPaimonOnAnOlderModule(t *testing.T) {
	ctx := context.Background()
	rt, err := sc.LoadRuntime(ctx, filepath.Join(repo, "dist", "sink-coordinator-0.2.4.core.wasm"), sc.Options{CacheDir: filepath.Join(repo, "target", "go-cache")})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	if rt.HasSetTableFormat() {
		t.Fatal("0.2.4 exports set-table-format")
	}
	c, err := rt.NewCoordinator(ctx, sc.Config{Parallelism: 1, CommitUser: "job", Checkpointing: true}, sc.NewMemoryStorage(), sc.NewManualClock(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free()
	if err := c.SetTableFormat(sc.TableFormatNative); err != nil {
		t.Fatalf("native on 0.2.4: %v", err)
	}
	err = c.SetTableFormat(sc.TableFormatPaimon)
	var ic *sc.InvalidConfigError
	if !errors.As(err, &ic) || ic.Message != noSetTableFormat {
		t.Fatalf("paimon on 0.2.4: %v", err)
	}
	if out, err := c.Start(); err != nil || out.State != sc.Running {
		t.Fatalf("start after the refusal: %+v %v", out, err)
	}
	// The script runner prints the same error.
	var raw bytes.Buffer
	if err := script.Run(rt, []byte(setTableFormatScript), &raw); err != nil {
		t.Fatal(err)
	}
	want := `{"ok":null}` + "\n" + `{"err":{"kind":"invalid-config","message":"` + noSetTableFormat + `"}}` + "\n"
	if raw.String() != want {
		t.Fatalf("script on 0.2.4:\n%s", raw.String())
	}
}

const setTableFormatScript = `{"call": "coordinator", "h": 1, "args": [{"parallelism": 2, "commit-user": "job", "checkpointing": true, "final-commit": "on-checkpoint", "force-create-snapshot": false, "savepoint-auto-tag": false, "tag-time-retained-ms": null, "recovery": "restart"}, null]}
{"call": "set-table-format", "h": 1, "args": ["paimon"]}
`

// TestPaimonScriptCall: the script runner's set-table-format line.
func TestPaimonScriptCall(t *testing.T) {
	var raw bytes.Buffer
	if err := script.Run(runtime(t), []byte(setTableFormatScript), &raw); err != nil {
		t.Fatal(err)
	}
	if want := "{\"ok\":null}\n{\"ok\":null}\n"; raw.String() != want {
		t.Fatalf("raw results:\n%s", raw.String())
	}
	bad := strings.Replace(setTableFormatScript, `["paimon"]`, `["iceberg"]`, 1)
	var f *script.Failure
	if err := script.Run(runtime(t), []byte(bad), &raw); !errors.As(err, &f) || !strings.Contains(f.Message, `unknown table format "iceberg"`) {
		t.Fatalf("an unknown format: %v", err)
	}
}

// TestPaimonBadCommittable: bytes that are no PCM committable are a fatal
// invalid-event naming the subtask and the checkpoint; nothing is written.
func TestPaimonBadCommittable(t *testing.T) {
	g := readGolden(t)
	storage := sc.NewMemoryStorage()
	c := paimonCoordinator(t, runtime(t), g, storage)
	if _, err := c.Start(); err != nil {
		t.Fatal(err)
	}
	_, err := c.Event(1, 0, sc.Entry{Checkpoint: 7, Committables: [][]byte{{0x00}}})
	var ie *sc.InvalidEventError
	if !errors.As(err, &ie) || !strings.HasPrefix(ie.Message, "event of subtask 1 for checkpoint 7: committable 0: ") {
		t.Fatalf("a bad committable: %v", err)
	}
	if s, _ := c.State(); s != sc.Failed {
		t.Fatalf("state %v", s)
	}
	if keys := storage.Keys(); !slices.Equal(keys, []string{"schema/schema-0"}) {
		t.Fatalf("keys %v", keys)
	}
}

// TestPaimonRuntimeOption: Options.TableFormat applies the format to every
// coordinator the Runtime creates; on a 0.2.4 module Paimon makes
// NewCoordinator fail with the refusal, native creates as before.
func TestPaimonRuntimeOption(t *testing.T) {
	ctx := context.Background()
	cache := filepath.Join(repo, "target", "go-cache")
	rt, err := sc.LoadRuntime(ctx, corePath(t), sc.Options{CacheDir: cache, TableFormat: sc.TableFormatPaimon})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	g := readGolden(t)
	storage := sc.NewMemoryStorage()
	if _, err := storage.PutIfAbsent(g.Schema.Key, unhex(t, g.Schema.Value)); err != nil {
		t.Fatal(err)
	}
	c, err := rt.NewCoordinator(ctx, sc.Config{Parallelism: 2, CommitUser: "job", Checkpointing: true}, storage, sc.NewManualClock(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free()
	if _, err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var ie *sc.InvalidEventError
	if _, err := c.Event(0, 0, sc.Entry{Checkpoint: 1, Committables: [][]byte{[]byte("not pcm")}}); !errors.As(err, &ie) {
		t.Fatalf("a native committable on the Paimon coordinator: %v", err)
	}

	old := filepath.Join(repo, "dist", "sink-coordinator-0.2.4.core.wasm")
	for _, f := range []sc.TableFormat{sc.TableFormatNative, sc.TableFormatPaimon} {
		ort, err := sc.LoadRuntime(ctx, old, sc.Options{CacheDir: cache, TableFormat: f})
		if err != nil {
			t.Fatal(err)
		}
		c, err := ort.NewCoordinator(ctx, sc.Config{Parallelism: 1, CommitUser: "job", Checkpointing: true}, sc.NewMemoryStorage(), sc.NewManualClock(1), nil)
		var ic *sc.InvalidConfigError
		switch {
		case f == sc.TableFormatNative && err != nil:
			t.Fatalf("native on 0.2.4: %v", err)
		case f == sc.TableFormatPaimon && (!errors.As(err, &ic) || ic.Message != noSetTableFormat || c != nil):
			t.Fatalf("paimon on 0.2.4: %v %v", c, err)
		}
		if c != nil {
			c.Free()
		}
		_ = ort.Close(ctx)
	}
	if _, err := sc.LoadRuntime(ctx, corePath(t), sc.Options{TableFormat: 7}); err == nil || !strings.Contains(err.Error(), "TableFormat(7) is not a WIT case") {
		t.Fatalf("an unknown format: %v", err)
	}
}

// TestPaimonFormatOnlyWhileCreated: after Start, set-table-format is a
// fatal illegal-state.
func TestPaimonFormatOnlyWhileCreated(t *testing.T) {
	c := startedCoordinator(t, runtime(t), sc.Config{Parallelism: 1, CommitUser: "job", Checkpointing: true}, sc.NewMemoryStorage(), 1)
	var is *sc.IllegalStateError
	if err := c.SetTableFormat(sc.TableFormatPaimon); !errors.As(err, &is) {
		t.Fatalf("after start: %v", err)
	}
	if got := sc.TableFormatPaimon.String(); got != "paimon" {
		t.Fatal(got)
	}
}
