package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestMinimal runs the example of docs/hosts/go.md, which must be this
// file's main.go byte for byte.
func TestMinimal(t *testing.T) {
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../../../docs/hosts/go.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, append(append([]byte("```go\n"), src...), "```"...)) {
		t.Fatal("docs/hosts/go.md does not show examples/minimal/main.go as it is: copy it again")
	}
	wit, err := os.ReadFile("../../../../wit/coordinator.wit")
	if err != nil {
		t.Fatal(err)
	}
	version := regexp.MustCompile(`(?m)^package sink:coordinator@(\S+);`).FindSubmatch(wit)[1]
	core := filepath.Join("../../../../dist", "sink-coordinator-"+string(version)+".core.wasm")

	r, w, _ := os.Pipe()
	stdout := os.Stdout
	os.Stdout = w
	err = run(core, t.TempDir())
	os.Stdout = stdout
	w.Close()
	out, _ := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	const want = "committed [1], committed-up-to 1\nrefused: event: subtask 7 is outside parallelism 2\n"
	if string(out) != want {
		t.Fatalf("printed %q, want %q", out, want)
	}
}
