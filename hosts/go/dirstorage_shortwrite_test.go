package sinkcoord_test

// A write cut short by the file system (RLIMIT_FSIZE in a child process: a
// short write, then EFBIG, as on a nearly full disk) publishes nothing and
// leaves no temporary file: the value is whole or absent (issue 26, "short
// writes and ENOSPC").

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	sc "github.com/sink-coordinator/sink-coordinator-go"
)

const shortWriteChild = "SINKCOORD_SHORT_WRITE_DIR"

func TestDirectoryStorageShortWrite(t *testing.T) {
	if dir := os.Getenv(shortWriteChild); dir != "" {
		// The child: one 600 KiB create-once and one overwrite under the limit.
		d, err := sc.OpenDirectoryStorage(dir)
		if err != nil {
			t.Fatal(err)
		}
		created, err := d.PutIfAbsent("snapshot/1", make([]byte, 600<<10))
		perr := d.Put("tag/big", make([]byte, 600<<10))
		var io *sc.BackendIOError
		out, _ := json.Marshal(map[string]any{
			"created": created, "typed": errors.As(err, &io), "error": fmt.Sprint(err),
			"putTyped": errors.As(perr, &io), "putError": fmt.Sprint(perr),
		})
		fmt.Println("RESULT " + string(out))
		return
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to set the file size limit")
	}
	dir := t.TempDir()
	// SIGXFSZ ignored (inherited across exec), so the write fails with EFBIG
	// instead of killing the child; 200 blocks of 512 or 1024 bytes < 600 KiB.
	cmd := exec.Command("sh", "-c", `trap "" XFSZ; ulimit -f 200; exec "$0" "$@"`,
		os.Args[0], "-test.run=^TestDirectoryStorageShortWrite$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), shortWriteChild+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	_, line, ok := strings.Cut(string(out), "RESULT ")
	if !ok {
		t.Fatalf("child printed no result:\n%s", out)
	}
	var r struct {
		Created, Typed, PutTyped bool
		Error, PutError          string
	}
	if err := json.Unmarshal([]byte(strings.SplitN(line, "\n", 2)[0]), &r); err != nil {
		t.Fatal(err)
	}
	if r.Created || !r.Typed || !r.PutTyped {
		t.Fatalf("a cut-short write must be a *BackendIOError, not a create: %+v", r)
	}
	var left []string
	_ = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			left = append(left, p)
		}
		return nil
	})
	if len(left) != 0 {
		t.Fatalf("a cut-short write left files (a torn value or a temporary file): %q", left)
	}
}
