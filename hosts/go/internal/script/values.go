package script

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	sc "github.com/sink-coordinator/sink-coordinator-go"
)

// argError: a script argument the executor cannot read (exit 1).
type argError struct{ err error }

func (e *argError) Error() string { return e.err.Error() }

type executor struct {
	p            *player
	rt           *sc.Runtime
	coordinators map[int64]*sc.Coordinator
	writers      map[int64]*sc.Writer
	table        *sc.Table
}

func (e *executor) free() {
	for _, c := range e.coordinators {
		c.Free()
	}
	for _, w := range e.writers {
		w.Free()
	}
	if e.table != nil {
		e.table.Free()
	}
}

// Wire forms (testkit/src/script/wire.rs): {"u64": "N"}, {"s64": "N"},
// {"bytes": HEX}, null for none, records with kebab-case fields, enums as
// strings, u32 as plain numbers.

type u64 uint64

func (v *u64) UnmarshalJSON(b []byte) error {
	return unwrap(b, "u64", "a u64", (*uint64)(v), func(s string) (uint64, error) { return strconv.ParseUint(s, 10, 64) })
}

type s64 int64

func (v *s64) UnmarshalJSON(b []byte) error {
	return unwrap(b, "s64", "an s64", (*int64)(v), func(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) })
}

type blob []byte

func (v *blob) UnmarshalJSON(b []byte) error {
	return unwrap(b, "bytes", "bytes", (*[]byte)(v), hex.DecodeString)
}

// unwrap decodes the wire form {key: "TEXT"} into *dst with parse (what
// names the form in the error).
func unwrap[T any](b []byte, key, what string, dst *T, parse func(string) (T, error)) error {
	var w map[string]*string
	if err := json.Unmarshal(b, &w); err != nil || w[key] == nil {
		return fmt.Errorf("not %s: %s", what, b)
	}
	v, err := parse(*w[key])
	*dst = v
	return err
}

type wireEntry struct {
	Checkpoint   u64    `json:"checkpoint"`
	Committables []blob `json:"committables"`
	Watermark    *s64   `json:"watermark"`
	Savepoint    bool   `json:"savepoint"`
}

func (w wireEntry) entry() sc.Entry {
	e := sc.Entry{Checkpoint: uint64(w.Checkpoint), Savepoint: w.Savepoint, Committables: blobs(w.Committables)}
	if w.Watermark != nil {
		e.Watermark = new(int64(*w.Watermark))
	}
	return e
}

func blobs(bs []blob) [][]byte {
	out := make([][]byte, len(bs))
	for i, b := range bs {
		out[i] = b
	}
	return out
}

type wireConfig struct {
	Parallelism         uint32 `json:"parallelism"`
	CommitUser          string `json:"commit-user"`
	Checkpointing       bool   `json:"checkpointing"`
	FinalCommit         string `json:"final-commit"`
	ForceCreateSnapshot bool   `json:"force-create-snapshot"`
	SavepointAutoTag    bool   `json:"savepoint-auto-tag"`
	TagTimeRetainedMs   *u64   `json:"tag-time-retained-ms"`
	Recovery            string `json:"recovery"`
}

type wireRestore struct {
	Checkpoint       u64      `json:"checkpoint"`
	State            blob     `json:"state"`
	FinishedSubtasks []uint32 `json:"finished-subtasks"`
}

type wireLimits struct {
	MaxCommittableBytes u64 `json:"max-committable-bytes"`
	MaxEventBytes       u64 `json:"max-event-bytes"`
	MaxSnapshotBytes    u64 `json:"max-snapshot-bytes"`
}

// wireCase is the one of cases whose WIT name (its String) is name; field
// names the config field in the error.
func wireCase[T fmt.Stringer](field, name string, cases ...T) (T, error) {
	for _, c := range cases {
		if c.String() == name {
			return c, nil
		}
	}
	var zero T
	return zero, fmt.Errorf("%s %q", field, name)
}

func (w wireConfig) config() (sc.Config, error) {
	c := sc.Config{Parallelism: w.Parallelism, CommitUser: w.CommitUser, Checkpointing: w.Checkpointing,
		ForceCreateSnapshot: w.ForceCreateSnapshot, SavepointAutoTag: w.SavepointAutoTag}
	var err error
	if c.FinalCommit, err = wireCase("final-commit", w.FinalCommit, sc.OnCheckpoint, sc.OnEndInput); err != nil {
		return c, err
	}
	if c.Recovery, err = wireCase("recovery", w.Recovery, sc.Restart, sc.Continue); err != nil {
		return c, err
	}
	if w.TagTimeRetainedMs != nil {
		c.TagTimeRetainedMs = new(uint64(*w.TagTimeRetainedMs))
	}
	return c, nil
}

// args decodes the call's arguments into ptrs, one per argument.
func args(raw []json.RawMessage, ptrs ...any) error {
	if len(raw) != len(ptrs) {
		return &argError{fmt.Errorf("%d arguments, expected %d", len(raw), len(ptrs))}
	}
	for i, p := range ptrs {
		if err := json.Unmarshal(raw[i], p); err != nil {
			return &argError{fmt.Errorf("argument %d: %v", i, err)}
		}
	}
	return nil
}

func (e *executor) invoke(name string, h json.RawMessage, raw []json.RawMessage) (any, error) {
	var handle int64 = -1
	if h != nil {
		if err := json.Unmarshal(h, &handle); err != nil {
			return nil, &argError{err}
		}
	}
	ctx := context.Background()
	switch {
	case name == "coordinator":
		var cfg wireConfig
		var restore *wireRestore
		if err := args(raw, &cfg, &restore); err != nil {
			return nil, err
		}
		config, err := cfg.config()
		if err != nil {
			return nil, &argError{err}
		}
		var rp *sc.RestorePoint
		if restore != nil {
			rp = &sc.RestorePoint{Checkpoint: uint64(restore.Checkpoint), State: restore.State, FinishedSubtasks: restore.FinishedSubtasks}
		}
		c, err := e.rt.NewCoordinator(ctx, config, e.p, e.p, rp)
		if err != nil {
			return nil, err
		}
		e.coordinators[handle] = c
		return nil, nil
	case name == "writer":
		var subtask uint32
		if err := args(raw, &subtask); err != nil {
			return nil, err
		}
		w, err := e.rt.NewWriter(ctx, subtask, e.p, e.p)
		if err != nil {
			return nil, err
		}
		e.writers[handle] = w
		return nil, nil
	case h == nil:
		if e.table == nil {
			t, err := e.rt.NewTable(ctx, e.p, e.p)
			if err != nil {
				return nil, err
			}
			e.table = t
		}
		return e.tableCall(name, raw)
	}
	if c, ok := e.coordinators[handle]; ok {
		return e.coordinatorCall(c, name, raw)
	}
	if w, ok := e.writers[handle]; ok {
		return e.writerCall(w, name, raw)
	}
	return nil, e.p.diverge(fmt.Sprintf("no handle %d", handle))
}

func (e *executor) coordinatorCall(c *sc.Coordinator, name string, raw []json.RawMessage) (any, error) {
	var out sc.Outcome
	var err error
	switch name {
	case "set-limits":
		var l wireLimits
		if err := args(raw, &l); err != nil {
			return nil, err
		}
		return nil, c.SetLimits(sc.Limits{MaxCommittableBytes: uint64(l.MaxCommittableBytes), MaxEventBytes: uint64(l.MaxEventBytes), MaxSnapshotBytes: uint64(l.MaxSnapshotBytes)})
	case "set-table-format":
		var name string
		if err := args(raw, &name); err != nil {
			return nil, err
		}
		format, err := sc.ParseTableFormat(name)
		if err != nil {
			return nil, &argError{err}
		}
		return nil, c.SetTableFormat(format)
	case "start":
		out, err = c.Start()
	case "event":
		var subtask, attempt uint32
		var entry wireEntry
		if err := args(raw, &subtask, &attempt, &entry); err != nil {
			return nil, err
		}
		out, err = c.Event(subtask, attempt, entry.entry())
	case "restored":
		var subtask, attempt uint32
		var cp u64
		var entries []wireEntry
		if err := args(raw, &subtask, &attempt, &cp, &entries); err != nil {
			return nil, err
		}
		es := make([]sc.Entry, len(entries))
		for i, w := range entries {
			es[i] = w.entry()
		}
		out, err = c.Restored(subtask, attempt, uint64(cp), es)
	case "subtask-reset":
		var subtask uint32
		var cp *u64
		if err := args(raw, &subtask, &cp); err != nil {
			return nil, err
		}
		var p *uint64
		if cp != nil {
			p = new(uint64(*cp))
		}
		out, err = c.SubtaskReset(subtask, p)
	case "checkpoint", "checkpoint-complete", "checkpoint-aborted":
		var cp u64
		if err := args(raw, &cp); err != nil {
			return nil, err
		}
		switch name {
		case "checkpoint":
			state, err := c.Checkpoint(uint64(cp))
			return hex.EncodeToString(state), err
		case "checkpoint-complete":
			out, err = c.CheckpointComplete(uint64(cp))
		default:
			out, err = c.CheckpointAborted(uint64(cp))
		}
	case "close":
		out, err = c.Close()
	case "state":
		s, err := c.State()
		return s.String(), err
	case "committed-up-to":
		v, err := c.CommittedUpTo()
		return v, err
	default:
		return nil, &argError{fmt.Errorf("unknown coordinator call %q", name)}
	}
	if err != nil {
		return nil, err
	}
	return outcome(out), nil
}

func outcome(o sc.Outcome) map[string]any {
	return map[string]any{
		"state": o.State.String(), "committed": nonNil(o.Committed), "tags-created": nonNil(o.TagsCreated),
		"tags-deleted": nonNil(o.TagsDeleted), "restart-required": o.RestartRequired, "committed-up-to": o.CommittedUpTo,
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func entry(e sc.Entry) map[string]any {
	cs := make([]string, len(e.Committables))
	for i, c := range e.Committables {
		cs[i] = hex.EncodeToString(c)
	}
	return map[string]any{"checkpoint": e.Checkpoint, "committables": cs, "watermark": e.Watermark, "savepoint": e.Savepoint}
}

func (e *executor) writerCall(w *sc.Writer, name string, raw []json.RawMessage) (any, error) {
	switch name {
	case "report":
		var cp u64
		var cs []blob
		var wm *s64
		var sp bool
		if err := args(raw, &cp, &cs, &wm, &sp); err != nil {
			return nil, err
		}
		en, err := w.Report(uint64(cp), blobs(cs), (*int64)(wm), sp)
		return entry(en), err
	case "end-input":
		var cs []blob
		var wm *s64
		if err := args(raw, &cs, &wm); err != nil {
			return nil, err
		}
		en, err := w.EndInput(blobs(cs), (*int64)(wm))
		return entry(en), err
	case "committed", "checkpoint-aborted":
		var cp u64
		if err := args(raw, &cp); err != nil {
			return nil, err
		}
		if name == "committed" {
			return nil, w.Committed(uint64(cp))
		}
		return nil, w.CheckpointAborted(uint64(cp))
	case "state":
		b, err := w.State()
		return hex.EncodeToString(b), err
	case "restore":
		var state blob
		var cp u64
		if err := args(raw, &state, &cp); err != nil {
			return nil, err
		}
		es, err := w.Restore(state, uint64(cp))
		out := make([]any, len(es))
		for i, en := range es {
			out[i] = entry(en)
		}
		return out, err
	}
	return nil, &argError{fmt.Errorf("unknown writer call %q", name)}
}

func snapshot(s *sc.Snapshot) any {
	if s == nil {
		return nil
	}
	cs := make([]any, len(s.Committables))
	for i, c := range s.Committables {
		cs[i] = []any{c.Subtask, hex.EncodeToString(c.Bytes)}
	}
	return map[string]any{"id": s.ID, "commit-user": s.CommitUser, "identifier": s.Identifier,
		"watermark": s.Watermark, "time-ms": s.TimeMs, "committables": cs}
}

func (e *executor) tableCall(name string, raw []json.RawMessage) (any, error) {
	t := e.table
	switch name {
	case "latest-snapshot":
		if err := args(raw); err != nil {
			return nil, err
		}
		s, err := t.LatestSnapshot()
		return snapshot(s), err
	case "snapshot-by-id":
		var id u64
		if err := args(raw, &id); err != nil {
			return nil, err
		}
		s, err := t.SnapshotByID(uint64(id))
		return snapshot(s), err
	case "list-snapshots":
		ss, err := t.ListSnapshots()
		out := make([]any, len(ss))
		for i := range ss {
			out[i] = snapshot(&ss[i])
		}
		return out, err
	case "list-tags":
		ts, err := t.ListTags()
		out := make([]any, len(ts))
		for i, g := range ts {
			out[i] = map[string]any{"name": g.Name, "snapshot-id": g.SnapshotID, "identifier": g.Identifier,
				"create-time-ms": g.CreateTimeMs, "expire-time-ms": g.ExpireTimeMs}
		}
		return out, err
	}
	return nil, &argError{fmt.Errorf("unknown table call %q", name)}
}
