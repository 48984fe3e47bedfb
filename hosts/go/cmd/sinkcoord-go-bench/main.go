// Command sinkcoord-go-bench prints `make bench`'s Go rows: the realistic
// job of issue 10 through the Go package on wazero (compiler mode), per
// event and as a ratio to Rust-wasmtime's figure of the same run (criterion's
// median of job_p256/component, which `make bench` measures just before),
// the events-packed batch alone per event (against events_batch_p256/component),
// an empty call, a new instance, and compiling the module cold and from the
// compilation cache. The benchmarks are internal/benchjob's testing.B
// functions (`go test -bench .` runs the same).
//
//	sinkcoord-go-bench --core CORE.wasm [--criterion DIR] [--json]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	sc "github.com/sink-coordinator/sink-coordinator-go"
	"github.com/sink-coordinator/sink-coordinator-go/internal/benchjob"
)

// median is criterion's median estimate of bench id, in ns.
func median(dir, id string) (float64, bool) {
	b, err := os.ReadFile(filepath.Join(dir, id, "new", "estimates.json"))
	if err != nil {
		return 0, false
	}
	var v struct {
		Median struct {
			PointEstimate float64 `json:"point_estimate"`
		} `json:"median"`
	}
	if json.Unmarshal(b, &v) != nil || v.Median.PointEstimate == 0 {
		return 0, false
	}
	return v.Median.PointEstimate, true
}

func us(ns float64) string {
	if ns >= 1e6 {
		return fmt.Sprintf("%.2f ms", ns/1e6)
	}
	return fmt.Sprintf("%.1f µs", ns/1e3)
}

func main() {
	core := flag.String("core", "", "the core module")
	criterion := flag.String("criterion", "", "criterion's output directory (target/criterion)")
	asJSON := flag.Bool("json", false, "print one JSON line instead of table rows")
	flag.Parse()
	if *core == "" {
		fmt.Fprintln(os.Stderr, "usage: sinkcoord-go-bench --core CORE.wasm [--criterion DIR] [--json]")
		os.Exit(2)
	}
	bytes, err := os.ReadFile(*core)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sinkcoord-go-bench:", err)
		os.Exit(1)
	}
	ctx := context.Background()
	cache, err := os.MkdirTemp("", "sinkcoord-go-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "sinkcoord-go-bench:", err)
		os.Exit(1)
	}
	defer os.RemoveAll(cache)
	rt, err := sc.NewRuntime(ctx, bytes, sc.Options{CacheDir: cache})
	if err != nil {
		fmt.Fprintln(os.Stderr, "sinkcoord-go-bench:", err)
		os.Exit(1)
	}
	defer rt.Close(ctx)

	job := testing.Benchmark(benchjob.Job(rt))
	empty := testing.Benchmark(benchjob.EmptyCall(rt))
	inst := testing.Benchmark(benchjob.Instantiate(rt))
	cold := testing.Benchmark(benchjob.Compile(bytes, false, false))
	warm := testing.Benchmark(benchjob.Compile(bytes, false, true))
	cycle := float64(job.NsPerOp())
	batch := job.Extra["batch-ns/event"]
	res := map[string]any{
		"host": "go", "runtime": fmt.Sprintf("%s, wazero v1.12.0 compiler", runtime.Version()), "writers": benchjob.Writers,
		"cycles": job.N, "cycle_ns": cycle, "event_ns": cycle / benchjob.Writers, "batch_event_ns": batch,
		"empty_call_ns": empty.NsPerOp(), "instantiate_ns": inst.NsPerOp(),
		"compile_cold_ns": cold.NsPerOp(), "compile_cache_hit_ns": warm.NsPerOp(),
	}
	rust, haveRust := median(*criterion, "job_p256/component")
	rustBatch, haveBatch := median(*criterion, "events_batch_p256/component")
	rustNative, haveNative := median(*criterion, "events_batch_p256/native")
	if haveRust {
		res["rust_component_cycle_ns"] = rust
		res["ratio"] = cycle / rust
	}
	if *asJSON {
		b, _ := json.Marshal(res)
		fmt.Println(string(b))
		return
	}
	ratio := "Rust-wasmtime not measured in this run (`make bench` runs criterion first)"
	if haveRust {
		ratio = fmt.Sprintf("**%.2f×** (%s vs %s per cycle)", cycle/rust, us(cycle), us(rust))
	}
	batchRow := fmt.Sprintf("%.0f ns", batch)
	if haveBatch && haveNative {
		batchRow += fmt.Sprintf(" (Rust-wasmtime %.0f ns, native %.0f ns)", rustBatch/benchjob.Writers, rustNative/benchjob.Writers)
	}
	fmt.Println("| what | now | goal |\n|---|---|---|")
	fmt.Printf("| Go (wazero v1.12.0, compiler) per batched event, realistic job P = 256 ÷ Rust-wasmtime | %s; %.2f µs per event | ≤ 2× |\n", ratio, cycle/benchjob.Writers/1e3)
	fmt.Printf("| Go: the events-packed batch alone, per event | %s | — |\n", batchRow)
	fmt.Printf("| Go: an empty call (`state()`) | %d ns | — |\n", empty.NsPerOp())
	fmt.Printf("| Go: new instance + constructor + `start` (module compiled) | %s | — |\n", us(float64(inst.NsPerOp())))
	fmt.Printf("| Go: compile the core module: cold; compilation-cache hit | %s; %s | — |\n", us(float64(cold.NsPerOp())), us(float64(warm.NsPerOp())))
}
