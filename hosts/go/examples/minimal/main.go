// Command minimal commits one checkpoint of two writers to a table in a
// local directory:
//
//	go run ./examples/minimal CORE.wasm TABLE_DIR
package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	sc "github.com/sink-coordinator/sink-coordinator-go"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: minimal CORE.wasm TABLE_DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(core, tableDir string) error {
	ctx := context.Background()
	// Compile once (cached on disk), then one instance per coordinator.
	rt, err := sc.LoadRuntime(ctx, core, sc.Options{CacheDir: os.TempDir() + "/sinkcoord-cache"})
	if err != nil {
		return err
	}
	defer rt.Close(ctx)

	table, err := sc.OpenDirectoryStorage(tableDir)
	if err != nil {
		return err
	}
	defer table.Close()
	cfg := sc.Config{Parallelism: 2, CommitUser: "job-1", Checkpointing: true}
	c, err := rt.NewCoordinator(ctx, cfg, table, sc.SystemClock{}, nil)
	if err != nil {
		return err
	}
	defer c.Free()
	if _, err := c.Start(); err != nil {
		return err
	}

	// Both writers' events for checkpoint 1, in one crossing.
	pack := func(files ...string) []byte {
		var cs [][]byte
		for _, f := range files {
			cs = append(cs, []byte(f))
		}
		return sc.PackCommittables(nil, cs)
	}
	_, err = c.EventsPacked([]sc.PackedEvent{
		{Subtask: 0, Checkpoint: 1, Committables: pack("part-0-1.parquet")},
		{Subtask: 1, Checkpoint: 1, Committables: pack("part-1-1.parquet", "part-1-2.parquet")},
	})
	if err != nil {
		return err
	}
	out, err := c.CheckpointComplete(1)
	if err != nil {
		return err
	}
	fmt.Printf("committed %v, committed-up-to %d\n", out.Committed, *out.CommittedUpTo)

	// Errors are values, one type per kind.
	_, err = c.Event(7, 0, sc.Entry{Checkpoint: 2})
	var invalid *sc.InvalidEventError
	if errors.As(err, &invalid) {
		fmt.Println("refused:", invalid.Message)
	}
	return nil
}
