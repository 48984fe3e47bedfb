package sinkcoord_test

import (
	"os"
	"testing"

	"github.com/sink-coordinator/sink-coordinator-go/internal/benchjob"
)

// go test -run '^$' -bench . ; `make bench` prints these with the ratio to
// Rust-wasmtime (cmd/sinkcoord-go-bench). Timings are never asserted.

func BenchmarkJobP256(b *testing.B)     { benchjob.Job(runtime(b))(b) }
func BenchmarkEmptyCall(b *testing.B)   { benchjob.EmptyCall(runtime(b))(b) }
func BenchmarkInstantiate(b *testing.B) { benchjob.Instantiate(runtime(b))(b) }

func BenchmarkCompile(b *testing.B) {
	core, err := os.ReadFile(corePath(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("cold", benchjob.Compile(core, false, false))
	b.Run("cache-hit", benchjob.Compile(core, false, true))
}
