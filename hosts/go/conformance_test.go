package sinkcoord_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	sc "github.com/sink-coordinator/sink-coordinator-go"
	"github.com/sink-coordinator/sink-coordinator-go/internal/script"
)

// repo is the checkout this module lives in (hosts/go).
var repo = func() string { p, _ := filepath.Abs("../.."); return p }()

// witVersion is the `package sink:coordinator@X;` of wit/coordinator.wit.
func witVersion(t testing.TB) string {
	b, err := os.ReadFile(filepath.Join(repo, "wit", "coordinator.wit"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^package sink:coordinator@(\S+);`).FindSubmatch(b)
	if m == nil {
		t.Fatal("wit/coordinator.wit declares no sink:coordinator package version")
	}
	return string(m[1])
}

// corePath is $SINK_COORDINATOR_CORE_WASM, else the committed
// dist/sink-coordinator-<WIT version>.core.wasm.
func corePath(t testing.TB) string {
	if p := os.Getenv("SINK_COORDINATOR_CORE_WASM"); p != "" {
		return p
	}
	return filepath.Join(repo, "dist", "sink-coordinator-"+witVersion(t)+".core.wasm")
}

var (
	sharedOnce sync.Once
	sharedRT   *sc.Runtime
	sharedErr  error
)

// runtime is one Runtime for the whole test binary: compiled once, an
// instance per coordinator, as a Go engine would hold it.
func runtime(t testing.TB) *sc.Runtime {
	sharedOnce.Do(func() {
		sharedRT, sharedErr = sc.LoadRuntime(context.Background(), corePath(t),
			sc.Options{CacheDir: filepath.Join(repo, "target", "go-cache")})
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return sharedRT
}

// sinkcoordBin is $SINKCOORD, else target/release/sinkcoord, else
// sinkcoord on PATH: it writes the call scripts and renders the results.
func sinkcoordBin(t testing.TB) string {
	if p := os.Getenv("SINKCOORD"); p != "" {
		return p
	}
	if p := filepath.Join(repo, "target", "release", "sinkcoord"); isExec(p) {
		return p
	}
	if p, err := exec.LookPath("sinkcoord"); err == nil {
		return p
	}
	t.Fatal("no sinkcoord CLI: run `make build` or set SINKCOORD=/path/to/sinkcoord")
	return ""
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

func run(t *testing.T, name string, args ...string) ([]byte, int) {
	var stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return append(out, stderr.Bytes()...), exit.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return out, 0
}

var placeholders = regexp.MustCompile(`"message": "\.\.\."|"state_bytes": 0[,}]`)
var maskMessage = regexp.MustCompile(`"message": "(\\.|[^"\\])*"`)
var maskState = regexp.MustCompile(`"state_bytes": [0-9]+`)

// sameResult is compare.sh's rule: byte for byte, except that a
// hand-derived expected file with placeholders masks messages and lengths.
func sameResult(expected, got []byte) bool {
	if bytes.Equal(expected, got) {
		return true
	}
	if !placeholders.Match(expected) {
		return false
	}
	mask := func(b []byte) []byte {
		return maskState.ReplaceAll(maskMessage.ReplaceAll(b, []byte(`"message": "..."`)), []byte(`"state_bytes": 0`))
	}
	return bytes.Equal(mask(expected), mask(got))
}

// TestConformance plays every conformance and regression trace through the
// Go package: the resolved call script (`sinkcoord script`), executed here,
// rendered by `sinkcoord script --render`, must equal the expected result
// (the sibling .result.json) and, byte for byte, the native Rust core's
// result and checkpoint state bytes (`sinkcoord replay --native --states`).
func TestConformance(t *testing.T) {
	bin := sinkcoordBin(t)
	rt := runtime(t)
	var traces []string
	for _, dir := range []string{"tests/conformance", "tests/regressions"} {
		found, _ := filepath.Glob(filepath.Join(repo, dir, "*.trace.json"))
		traces = append(traces, found...)
	}
	if len(traces) == 0 {
		t.Fatal("no traces under tests/conformance and tests/regressions")
	}
	for _, trace := range traces {
		name := filepath.Base(filepath.Dir(trace)) + "/" + strings.TrimSuffix(filepath.Base(trace), ".trace.json")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tmp := t.TempDir()
			scriptText, code := run(t, bin, "script", trace)
			nativeStates := filepath.Join(tmp, "native.states")
			native, nativeCode := run(t, bin, "replay", "--native", "--states", nativeStates, trace)
			if code != 0 {
				if code != nativeCode {
					t.Fatalf("sinkcoord script exited %d, replay --native %d: %s", code, nativeCode, scriptText)
				}
				return // a malformed trace: rejected alike, nothing to run
			}
			var raw bytes.Buffer
			if err := script.Run(rt, scriptText, &raw); err != nil {
				t.Fatal(err)
			}
			rawPath, states := filepath.Join(tmp, "go.raw"), filepath.Join(tmp, "go.states")
			if err := os.WriteFile(rawPath, raw.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			doc, code := run(t, bin, "script", "--render", rawPath, "--states", states, trace)
			if code != 0 {
				t.Fatalf("sinkcoord script --render exited %d: %s", code, doc)
			}
			if expected, err := os.ReadFile(strings.TrimSuffix(trace, ".trace.json") + ".result.json"); err == nil {
				if !sameResult(expected, doc) {
					t.Errorf("result differs from the .result.json:\n%s", doc)
				}
			}
			if nativeCode != 0 || !bytes.Equal(doc, native) {
				t.Errorf("result differs from the native core's (exit %d):\n--- go\n%s\n--- native\n%s", nativeCode, doc, native)
			}
			a, errA := os.ReadFile(states)
			b, errB := os.ReadFile(nativeStates)
			if errA != nil || errB != nil || !bytes.Equal(a, b) {
				t.Errorf("checkpoint state bytes differ from the native core's (%v, %v)", errA, errB)
			}
		})
	}
}
