package sinkcoord_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sc "github.com/sink-coordinator/sink-coordinator-go"
)

func TestDirectoryStorageContract(t *testing.T) {
	dir, d := openDirectory(t)
	if v, found, err := d.Get("snapshot/1"); found || v != nil || err != nil {
		t.Fatalf("get of a missing key: %v %v %v", v, found, err)
	}
	if created, err := d.PutIfAbsent("snapshot/1", []byte("a")); !created || err != nil {
		t.Fatalf("first put-if-absent: %v %v", created, err)
	}
	if created, err := d.PutIfAbsent("snapshot/1", []byte("b")); created || err != nil {
		t.Fatalf("second put-if-absent: %v %v", created, err)
	}
	if v, found, _ := d.Get("snapshot/1"); !found || string(v) != "a" {
		t.Fatalf("the existing value was replaced: %q", v)
	}
	if created, err := d.PutIfAbsent("empty", nil); !created || err != nil {
		t.Fatal(err)
	}
	if v, found, _ := d.Get("empty"); !found || len(v) != 0 {
		t.Fatal("an empty value is a key")
	}
	for _, k := range []string{"hint/latest-snapshot", "tag/b", "tag/a", "snapshot/2"} {
		if err := d.Put(k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Put("tag/a", []byte("again")); err != nil {
		t.Fatal(err)
	}
	// A stale temporary file of a crashed run is never a key.
	os.WriteFile(filepath.Join(dir, "tag", sc.TmpPrefix+"1.1"), []byte("x"), 0o644)
	for prefix, want := range map[string][]string{
		"":           {"empty", "hint/latest-snapshot", "snapshot/1", "snapshot/2", "tag/a", "tag/b"},
		"tag/":       {"tag/a", "tag/b"},
		"snap":       {"snapshot/1", "snapshot/2"},
		"snapshot/2": {"snapshot/2"},
		"nothing/":   nil,
	} {
		if got, err := d.List(prefix); err != nil || !slices.Equal(got, want) {
			t.Errorf("list %q: %v %v", prefix, got, err)
		}
	}
	if err := d.Delete("tag/a"); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete("tag/a"); err != nil {
		t.Fatal("deleting a missing key fails")
	}
	var ik *sc.InvalidKeyError
	for _, k := range []string{"", "/abs", "a/../b", "a//b", "a\\b", "a\x00b", "./a", "tag/" + sc.TmpPrefix + "x"} {
		if _, _, err := d.Get(k); !errors.As(err, &ik) {
			t.Errorf("key %q: %v", k, err)
		}
	}
	// A symbolic link under the root is refused, never followed.
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644)
	os.Symlink(outside, filepath.Join(dir, "linked"))
	if _, _, err := d.Get("linked/secret"); !errors.As(err, &ik) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("get through a link: %v", err)
	}
	if _, err := d.PutIfAbsent("linked/new", []byte("x")); !errors.As(err, &ik) {
		t.Errorf("put through a link: %v", err)
	}
	if _, err := d.List("linked/"); !errors.As(err, &ik) {
		t.Errorf("list through a link: %v", err)
	}
	if _, err := d.List(""); !errors.As(err, &ik) {
		t.Errorf("list over a link: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "new")); err == nil {
		t.Error("a write went through the link")
	}
}

// TestDirectoryTableReadByTheRustCLI: a table the Go host commits to a
// directory is the Rust host's layout: `sinkcoord inspect` reads it.
func TestDirectoryTableReadByTheRustCLI(t *testing.T) {
	dir, d := openDirectory(t)
	c := newCoordinator(t, runtime(t), sc.Config{Parallelism: 1, CommitUser: "go-job", Checkpointing: true}, d, 5000, nil)
	c.Start()
	c.Event(0, 0, sc.Entry{Checkpoint: 1, Committables: [][]byte{[]byte("file-1")}})
	if out, err := c.CheckpointComplete(1); err != nil || len(out.Committed) != 1 {
		t.Fatalf("%+v %v", out, err)
	}
	out, err := exec.Command(sinkcoordBin(t), "inspect", dir).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "go-job") {
		t.Fatalf("sinkcoord inspect: %v\n%s", err, out)
	}
}
