package sinkcoord_test

// The storage conformance suite of every host (tests/storage/cases.json,
// tests/storage/README.md) against DirectoryStorage (every case) and
// MemoryStorage (the cases without bounds or a file system: it is a map for
// tests and examples, with the key rules). Every case runs even after another
// fails, each under a deadline (a storage call that hangs fails its case
// instead of the whole run); the test fails with one line per failed step.
// SINKCOORD_STORAGE_CASES names another cases file (to check that a broken
// expectation fails). A full-disk case runs on a tmpfs of
// options.full_disk_bytes mounted at the table root (root on Linux),
// unmounted after it; where the mount fails the case is skipped with one
// line saying why.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sc "github.com/sink-coordinator/sink-coordinator-go"
)

type suiteFile struct {
	Version int `json:"version"`
	Options struct {
		MaxValueBytes      int64  `json:"max_value_bytes"`
		OutsideFileContent string `json:"outside_file_content"`
		FullDiskBytes      int64  `json:"full_disk_bytes"`
	} `json:"options"`
	Cases []struct {
		Name     string     `json:"name"`
		Requires []string   `json:"requires"`
		Steps    []caseStep `json:"steps"`
	} `json:"cases"`
}

type caseStep struct {
	Op     string          `json:"op"`
	Key    *string         `json:"key"`
	Prefix *string         `json:"prefix"`
	Value  json.RawMessage `json:"value"`
	Expect struct {
		Error   string          `json:"error"`
		Missing bool            `json:"missing"`
		Value   json.RawMessage `json:"value"`
		Created *bool           `json:"created"`
		Keys    []string        `json:"keys"`
		Present []string        `json:"present"`
		Absent  []string        `json:"absent"`
	} `json:"expect"`
	// plant, plant-temp-links, race
	Path   string   `json:"path"`
	Kind   string   `json:"kind"`
	Target string   `json:"target"`
	Size   int64    `json:"size"`
	Dirs   []string `json:"dirs"`
	Count  int      `json:"count"`
	Racers int      `json:"racers"`
	Keys   int      `json:"keys"`
}

// The temporary-file prefix of every host's directory storage.
const tmpPrefix = ".sinkcoord-tmp."

func loadSuite(t *testing.T) suiteFile {
	path := os.Getenv("SINKCOORD_STORAGE_CASES")
	if path == "" {
		path = filepath.Join("..", "..", "tests", "storage", "cases.json")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s suiteFile
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.Version != 1 {
		t.Fatalf("cases.json version %d", s.Version)
	}
	return s
}

// valueOf: a string's UTF-8, or byte i of {size, seed} = (seed + i + (i >> 8)) & 0xff.
func valueOf(raw json.RawMessage) []byte {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []byte(s)
	}
	var p struct{ Size, Seed int }
	if err := json.Unmarshal(raw, &p); err != nil {
		panic(fmt.Sprintf("a value is a string or {size, seed}: %s", raw))
	}
	out := make([]byte, p.Size)
	for i := range out {
		out[i] = byte(p.Seed + i + i>>8)
	}
	return out
}

func showValue(b []byte) string {
	if len(b) <= 40 {
		return fmt.Sprintf("%q", b)
	}
	return fmt.Sprintf("<%d bytes>", len(b))
}

// kindOf names a storage error as the suite does.
func kindOf(err error) string {
	var tl *sc.ValueTooLargeError
	var ik *sc.InvalidKeyError
	var io *sc.BackendIOError
	switch {
	case errors.As(err, &tl):
		return "value-too-large"
	case errors.As(err, &ik):
		return "invalid-key"
	case errors.As(err, &io):
		return "io"
	}
	return fmt.Sprintf("untyped %T", err)
}

type table struct {
	open func() sc.Storage
	root string // "" without a file system
	// skip says why a case cannot run on this table after all (a full-disk
	// case whose tmpfs cannot be mounted).
	skip string
	// close releases the table after its case; "" or why it failed.
	close func() string
}

// oneLine joins a command's output lines.
func oneLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return strings.Join(lines, "; ")
}

// mountTmpfs mounts a tmpfs of size bytes at dir (the full-disk
// capability: root on Linux); "" or why it cannot.
func mountTmpfs(dir string, size int64) string {
	args := []string{"-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir}
	out, err := exec.Command("mount", args...).CombinedOutput()
	if err != nil {
		why := oneLine(out)
		if why == "" {
			why = err.Error()
		}
		return fmt.Sprintf("mount %s: %s", strings.Join(args, " "), why)
	}
	return ""
}

// unmount detaches the tmpfs at dir (umount -l: even while a handle is
// open); "" or why it failed.
func unmount(dir string) string {
	out, err := exec.Command("umount", "-l", dir).CombinedOutput()
	if err != nil {
		why := oneLine(out)
		if why == "" {
			why = err.Error()
		}
		return fmt.Sprintf("umount -l %s: %s", dir, why)
	}
	return ""
}

// withPid replaces {pid} in a planted path by this process's id.
func withPid(p string) string { return strings.ReplaceAll(p, "{pid}", fmt.Sprint(os.Getpid())) }

func plant(root string, s caseStep) error {
	outside := filepath.Join(filepath.Dir(root), "outside")
	target := filepath.Join(outside, strings.TrimPrefix(s.Target, "outside-"))
	if s.Op == "plant-temp-links" {
		for _, d := range s.Dirs {
			if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
				return err
			}
			for n := range s.Count {
				if err := os.Symlink(target, filepath.Join(root, d, fmt.Sprintf("%s%d.%d", tmpPrefix, os.Getpid(), n))); err != nil {
					return err
				}
			}
		}
		return nil
	}
	path := filepath.Join(root, withPid(s.Path))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	switch s.Kind {
	case "symlink":
		return os.Symlink(target, path)
	case "dir":
		return os.Mkdir(path, 0o755)
	case "file":
		return os.WriteFile(path, valueOf(s.Value), 0o644)
	case "sparse":
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer f.Close()
		return f.Truncate(s.Size)
	case "fifo":
		return syscall.Mkfifo(path, 0o644)
	}
	return fmt.Errorf("unknown kind %q", s.Kind)
}

func race(tb table, s caseStep, prefix string) string {
	results := make([][]bool, s.Racers)
	errs := make([]error, s.Racers)
	gates := make([]chan struct{}, s.Keys)
	arrived := make([]atomic.Int32, s.Keys)
	for k := range gates {
		gates[k] = make(chan struct{})
	}
	var wg sync.WaitGroup
	for r := range s.Racers {
		st := tb.open()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range s.Keys {
				// The last racer to arrive at key k releases everyone.
				if arrived[k].Add(1) == int32(s.Racers) {
					close(gates[k])
				}
				<-gates[k]
				created, err := st.PutIfAbsent(fmt.Sprintf("%s%d", prefix, k), []byte(fmt.Sprintf("racer-%d", r)))
				if err != nil {
					errs[r] = err
					// Release the others at the remaining keys.
					for j := k + 1; j < s.Keys; j++ {
						if arrived[j].Add(1) == int32(s.Racers) {
							close(gates[j])
						}
					}
					return
				}
				results[r] = append(results[r], created)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err.Error()
	}
	st := tb.open()
	for k := range s.Keys {
		var winners []int
		for r := range s.Racers {
			if results[r][k] {
				winners = append(winners, r)
			}
		}
		v, found, err := st.Get(fmt.Sprintf("%s%d", prefix, k))
		if len(winners) != 1 || err != nil || !found || string(v) != fmt.Sprintf("racer-%d", winners[0]) {
			return fmt.Sprintf("key %d: winners %v, stored %s (%v)", k, winners, showValue(v), err)
		}
	}
	return ""
}

// outcome compares a call's error with the expectation; "" when they agree
// and the caller should compare the result, "ok" when an expected error came.
func outcome(err error, want string, got func() string) (string, bool) {
	switch {
	case err != nil && want != "" && kindOf(err) == want:
		return "", true
	case err != nil:
		return fmt.Sprintf("got %s error: %v", kindOf(err), err), true
	case want != "":
		return fmt.Sprintf("expected a %s error, got %s", want, got()), true
	}
	return "", false
}

func runStep(tb table, st *sc.Storage, s caseStep, suite suiteFile) string {
	e := s.Expect
	key := ""
	if s.Key != nil {
		key = *s.Key
	}
	switch s.Op {
	case "get":
		v, found, err := (*st).Get(key)
		if why, done := outcome(err, e.Error, func() string { return showValue(v) }); done {
			return why
		}
		if e.Missing {
			if found {
				return "expected missing, got " + showValue(v)
			}
			return ""
		}
		if want := valueOf(e.Value); !found || string(v) != string(want) {
			return fmt.Sprintf("expected %s, got %s (found %v)", showValue(want), showValue(v), found)
		}
	case "put-if-absent":
		created, err := (*st).PutIfAbsent(key, valueOf(s.Value))
		if why, done := outcome(err, e.Error, func() string { return fmt.Sprintf("created=%v", created) }); done {
			return why
		}
		if created != *e.Created {
			return fmt.Sprintf("expected created=%v, got created=%v", *e.Created, created)
		}
	case "put":
		why, _ := outcome((*st).Put(key, valueOf(s.Value)), e.Error, func() string { return "ok" })
		return why
	case "delete":
		why, _ := outcome((*st).Delete(key), e.Error, func() string { return "ok" })
		return why
	case "list":
		keys, err := (*st).List(*s.Prefix)
		if why, done := outcome(err, e.Error, func() string { return fmt.Sprintf("%q", keys) }); done {
			return why
		}
		if !slices.Equal(keys, e.Keys) && !(len(keys) == 0 && len(e.Keys) == 0) {
			return fmt.Sprintf("expected %q, got %q", e.Keys, keys)
		}
	case "reopen":
		*st = tb.open()
	case "race":
		return race(tb, s, *s.Prefix)
	case "plant", "plant-temp-links":
		if err := plant(tb.root, s); err != nil {
			return err.Error()
		}
	case "check-temp":
		for _, p := range e.Present {
			if _, err := os.Lstat(filepath.Join(tb.root, withPid(p))); err != nil {
				return withPid(p) + " should be present"
			}
		}
		for _, p := range e.Absent {
			if _, err := os.Lstat(filepath.Join(tb.root, withPid(p))); err == nil {
				return withPid(p) + " should be absent"
			}
		}
	case "check-outside", "check-no-temp":
		if tb.root == "" {
			return ""
		}
		if s.Op == "check-no-temp" {
			var found []string
			_ = filepath.WalkDir(tb.root, func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() && strings.HasPrefix(d.Name(), tmpPrefix) {
					found = append(found, p)
				}
				return nil
			})
			if len(found) > 0 {
				return fmt.Sprintf("temporary files left: %q", found)
			}
			return ""
		}
		outside := filepath.Join(filepath.Dir(tb.root), "outside")
		content, _ := os.ReadFile(filepath.Join(outside, "file"))
		entries, _ := os.ReadDir(filepath.Join(outside, "dir"))
		_, missingErr := os.Lstat(filepath.Join(outside, "missing"))
		if string(content) != suite.Options.OutsideFileContent || len(entries) != 0 || missingErr == nil {
			return fmt.Sprintf("outside the table changed: file %q, %d entries in dir, missing created: %v",
				content, len(entries), missingErr == nil)
		}
	default:
		return "unknown op " + s.Op
	}
	return ""
}

// caseDeadline bounds one case: a call that hangs (a FIFO opened for
// reading waits for a writer) fails the case and the run goes on.
const caseDeadline = 60 * time.Second

// runSuite runs every case the backend can; fresh(t, name, requires) makes
// a case's table, and a table with skip counts as skipped, with one line
// saying why.
func runSuite(t *testing.T, name string, capabilities []string, fresh func(t *testing.T, name string, requires []string) table) {
	suite := loadSuite(t)
	var failures []string
	passed, skipped := 0, 0
	for _, c := range suite.Cases {
		if !slices.ContainsFunc(c.Requires, func(r string) bool { return !slices.Contains(capabilities, r) }) {
			tb := fresh(t, c.Name, c.Requires)
			if tb.skip != "" {
				t.Logf("storage conformance, %s: skipped: %s", c.Name, tb.skip)
				skipped++
				if tb.close != nil {
					tb.close()
				}
				continue
			}
			done := make(chan []string, 1)
			go func() {
				var lines []string
				st := tb.open()
				for i, s := range c.Steps {
					at := ""
					if s.Key != nil {
						at = *s.Key
					} else if s.Prefix != nil {
						at = *s.Prefix
					}
					if len(at) > 60 {
						at = at[:60] + "..."
					}
					if why := runStep(tb, &st, s, suite); why != "" {
						lines = append(lines, fmt.Sprintf("%s: %s step %d (%s %q): %s", name, c.Name, i, s.Op, at, why))
					}
				}
				done <- lines
			}()
			select {
			case lines := <-done:
				failures = append(failures, lines...)
				if len(lines) == 0 {
					passed++
				}
			case <-time.After(caseDeadline):
				failures = append(failures, fmt.Sprintf("%s: %s: did not finish within %v (a storage call hangs)", name, c.Name, caseDeadline))
			}
			if tb.close != nil {
				if why := tb.close(); why != "" {
					failures = append(failures, fmt.Sprintf("%s: %s: %s", name, c.Name, why))
				}
			}
		} else {
			skipped++
		}
	}
	t.Logf("storage conformance, %s: %d passed, %d failed steps, %d skipped", name, passed, len(failures), skipped)
	if passed == 0 {
		t.Errorf("%s: no case ran", name)
	}
	if len(failures) > 0 {
		t.Errorf("%d failed steps:\n%s", len(failures), strings.Join(failures, "\n"))
	}
}

func TestStorageConformanceDirectory(t *testing.T) {
	suite := loadSuite(t)
	capabilities := []string{"key-rules", "bounded", "filesystem", "full-disk"}
	runSuite(t, "DirectoryStorage", capabilities, func(t *testing.T, name string, requires []string) table {
		// Not t.TempDir: if a full-disk case's tmpfs could not be unmounted, the
		// test's cleanup must not delete through the mount (close removes base).
		base, err := os.MkdirTemp("", "sinkcoord-storage-case-")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(base, "outside", "dir"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(base, "outside", "file"), []byte(suite.Options.OutsideFileContent), 0o644); err != nil {
			t.Fatal(err)
		}
		root := filepath.Join(base, "table")
		tb := table{root: root}
		// full-disk: a small tmpfs at the root, before the storage is opened.
		mounted := false
		if slices.Contains(requires, "full-disk") {
			if err := os.Mkdir(root, 0o755); err != nil {
				t.Fatal(err)
			}
			if why := mountTmpfs(root, suite.Options.FullDiskBytes); why != "" {
				tb.skip = "cannot mount a tmpfs (" + why + ")"
			} else {
				mounted = true
			}
		}
		var mu sync.Mutex
		var handles []*sc.DirectoryStorage
		tb.open = func() sc.Storage {
			d, err := sc.OpenDirectoryStorage(root, sc.WithMaxValueBytes(suite.Options.MaxValueBytes))
			if err != nil {
				panic(err)
			}
			mu.Lock()
			handles = append(handles, d)
			mu.Unlock()
			return d
		}
		tb.close = func() string {
			mu.Lock()
			for _, d := range handles {
				_ = d.Close()
			}
			mu.Unlock()
			if mounted {
				if why := unmount(root); why != "" {
					// Never remove through a mount that is still attached.
					return why
				}
			}
			_ = os.RemoveAll(base)
			return ""
		}
		return tb
	})
}

func TestStorageConformanceMemory(t *testing.T) {
	runSuite(t, "MemoryStorage", []string{"key-rules"}, func(t *testing.T, name string, requires []string) table {
		m := sc.NewMemoryStorage()
		return table{open: func() sc.Storage { return m }}
	})
}
