package sinkcoord_test

import (
	"context"
	"testing"

	sc "github.com/sink-coordinator/sink-coordinator-go"
)

// newCoordinator is rt's coordinator over storage on a ManualClock at
// clockMs, freed when the test ends (after the test's own defers: a test
// that closes its own Runtime with defer frees its coordinator itself).
func newCoordinator(t testing.TB, rt *sc.Runtime, cfg sc.Config, storage sc.Storage, clockMs uint64, restore *sc.RestorePoint) *sc.Coordinator {
	t.Helper()
	c, err := rt.NewCoordinator(context.Background(), cfg, storage, sc.NewManualClock(clockMs), restore)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Free)
	return c
}

// startedCoordinator is newCoordinator (no restore point) after a Start
// that must succeed.
func startedCoordinator(t testing.TB, rt *sc.Runtime, cfg sc.Config, storage sc.Storage, clockMs uint64) *sc.Coordinator {
	t.Helper()
	c := newCoordinator(t, rt, cfg, storage, clockMs, nil)
	if _, err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return c
}

// newWriter is rt's writer of subtask 0 (no storage, no clock), freed when
// the test ends.
func newWriter(t testing.TB, rt *sc.Runtime) *sc.Writer {
	t.Helper()
	w, err := rt.NewWriter(context.Background(), 0, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Free)
	return w
}

// openDirectory is a DirectoryStorage on a new temporary directory (also
// returned), closed when the test ends, after what used it is freed.
func openDirectory(t testing.TB) (string, *sc.DirectoryStorage) {
	t.Helper()
	dir := t.TempDir()
	d, err := sc.OpenDirectoryStorage(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return dir, d
}
