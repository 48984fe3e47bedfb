// Command sinkcoord-go-run executes a resolved call script (`sinkcoord
// script TRACE`) through the Go package on wazero and prints each call's
// raw result, one JSON line per call line; `sinkcoord script --render RAW
// TRACE` renders them. hosts/compare.sh runs it as the runtime "go".
//
//	sinkcoord-go-run --core CORE.wasm [--component COMPONENT.wasm] SCRIPT
//
// --core       the core module (dist/sink-coordinator-<version>.core.wasm;
//
//	its .sha256 beside it is checked when present)
//
// --component  if given, the core module must be this component's (its bytes
//
//	a section of it): the comparison runs one artifact everywhere
//
// Compiled code is cached in $SINK_COORDINATOR_GO_CACHE_DIR if set.
// Exit codes: 0 executed (even if calls returned errors), 1 the component's
// calls differ from the script, it trapped, or the host failed; 2 usage.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	sc "github.com/sink-coordinator/sink-coordinator-go"
	"github.com/sink-coordinator/sink-coordinator-go/internal/script"
)

func fail(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "sinkcoord-go-run: "+format+"\n", args...)
	os.Exit(code)
}

func main() {
	fs := flag.NewFlagSet("sinkcoord-go-run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	core := fs.String("core", "", "")
	component := fs.String("component", "", "")
	if err := fs.Parse(os.Args[1:]); err != nil || fs.NArg() != 1 || *core == "" {
		fail(2, "usage: sinkcoord-go-run --core CORE.wasm [--component COMPONENT.wasm] SCRIPT")
	}
	if *component != "" {
		c, err := os.ReadFile(*component)
		if err != nil {
			fail(1, "%v", err)
		}
		m, err := os.ReadFile(*core)
		if err != nil {
			fail(1, "%v", err)
		}
		if !bytes.Contains(c, m) {
			fail(1, "%s is not the core module of %s: rebuild dist/ (make component)", *core, *component)
		}
	}
	text, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		fail(1, "%v", err)
	}
	ctx := context.Background()
	rt, err := sc.LoadRuntime(ctx, *core, sc.Options{CacheDir: os.Getenv("SINK_COORDINATOR_GO_CACHE_DIR")})
	if err != nil {
		fail(1, "%v", err)
	}
	defer rt.Close(ctx)
	var out bytes.Buffer
	if err := script.Run(rt, text, &out); err != nil {
		var f *script.Failure
		if errors.As(err, &f) {
			fail(1, "%s", f.Message)
		}
		fail(1, "%v", err)
	}
	os.Stdout.Write(out.Bytes())
}
