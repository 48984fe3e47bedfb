package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPipeline runs the example job (4 writers, 6 checkpoints and the end
// of input, writer 1 crashing at checkpoint 3): every part file but the
// crashed attempt's is committed exactly once (Run checks the table).
func TestPipeline(t *testing.T) {
	core := os.Getenv("SINK_COORDINATOR_CORE_WASM")
	if core == "" {
		version := "" // the WIT version names the committed artifact
		b, err := os.ReadFile("../../../../wit/coordinator.wit")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if n, ok := strings.CutPrefix(line, "package sink:coordinator@"); ok {
				version = strings.TrimSuffix(n, ";")
			}
		}
		core = filepath.Join("../../../../dist", "sink-coordinator-"+version+".core.wasm")
	}
	o := Options{Core: core, Dir: t.TempDir(), Writers: 4, Checkpoints: 6, CrashAt: 3}
	committed, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if want := o.Writers*(o.Checkpoints+1) - 1; len(committed) != want {
		t.Fatalf("%d files committed, want %d", len(committed), want)
	}
}
