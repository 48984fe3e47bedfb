// Package script executes a resolved call script (`sinkcoord script TRACE`,
// format in hosts/README.md) through the Go package's typed API and writes
// each call's raw result, one JSON line per call line: {"ok": VALUE} or
// {"err": {"kind", "message"}}. `sinkcoord script --render RAW TRACE` turns
// them into the result document. As in hosts/node/run.mjs and
// hosts/python/run.py, the trace semantics stay in the Rust test kit: this
// only turns the script's arguments into the package's values and back, and
// serves storage and clock from the script, checking every import call.
package script

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	sc "github.com/sink-coordinator/sink-coordinator-go"
	"github.com/sink-coordinator/sink-coordinator-go/internal/keys"
)

// Failure is a run that must exit 1: the component's calls differ from the
// script, it trapped, or the script cannot be read.
type Failure struct{ Message string }

func (f *Failure) Error() string { return f.Message }

type line map[string]json.RawMessage

type fault struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Applied bool   `json:"applied"`
}

// player is the script: its lines, the position, and the in-memory table
// it serves as the Storage and Clock of every instance.
type player struct {
	lines      []line
	pos        int
	divergence string
	items      map[string][]byte
}

func (p *player) diverge(message string) error {
	if p.divergence == "" {
		p.divergence = fmt.Sprintf("script line %d: %s", p.pos+1, message)
	}
	return &sc.BackendIOError{Message: p.divergence}
}

func show(l line) string {
	if l == nil {
		return "the end of the script"
	}
	b, _ := json.Marshal(l)
	return string(b)
}

// expect: the next line must be this import call (every field of call).
func (p *player) expect(kind string, call map[string]string) (line, error) {
	var l line
	if p.pos < len(p.lines) {
		l = p.lines[p.pos]
	}
	same := l != nil && l[kind] != nil
	for k, v := range call {
		if !same {
			break
		}
		var got string
		same = json.Unmarshal(l[k], &got) == nil && got == v
	}
	if !same {
		want, _ := json.Marshal(call)
		return nil, p.diverge(fmt.Sprintf("the component calls %s, the script has %s", want, show(l)))
	}
	p.pos++
	return l, nil
}

func faultOf(l line) (*fault, error) {
	var f *fault
	if err := json.Unmarshal(l["fault"], &f); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *fault) err() error {
	if f.Kind == "invalid-key" {
		return &sc.InvalidKeyError{Message: f.Message}
	}
	return &sc.BackendIOError{Message: f.Message}
}

// write: applied unless the script's fault says it was not.
func (p *player) write(op, key string, value []byte, apply func() bool) (bool, error) {
	call := map[string]string{"storage": op, "key": key}
	if value != nil {
		call["value"] = hex.EncodeToString(value)
	}
	l, err := p.expect("storage", call)
	if err != nil {
		return false, err
	}
	f, err := faultOf(l)
	if err != nil {
		return false, p.diverge("a malformed fault")
	}
	if f != nil && !f.Applied {
		return false, f.err()
	}
	r := apply()
	if f != nil {
		return false, f.err()
	}
	return r, nil
}

func (p *player) read(op, key string) error {
	l, err := p.expect("storage", map[string]string{"storage": op, "key": key})
	if err != nil {
		return err
	}
	f, err := faultOf(l)
	if err != nil {
		return p.diverge("a malformed fault")
	}
	if f != nil {
		return f.err()
	}
	return nil
}

func (p *player) Get(key string) ([]byte, bool, error) {
	if err := p.read("get", key); err != nil {
		return nil, false, err
	}
	v, ok := p.items[key]
	return slices.Clone(v), ok, nil
}

func (p *player) PutIfAbsent(key string, value []byte) (bool, error) {
	return p.write("put-if-absent", key, value, func() bool {
		if _, ok := p.items[key]; ok {
			return false
		}
		p.items[key] = slices.Clone(value)
		return true
	})
}

func (p *player) Put(key string, value []byte) error {
	_, err := p.write("put", key, value, func() bool { p.items[key] = slices.Clone(value); return true })
	return err
}

func (p *player) Delete(key string) error {
	_, err := p.write("delete", key, nil, func() bool { delete(p.items, key); return true })
	return err
}

func (p *player) List(prefix string) ([]string, error) {
	if err := p.read("list", prefix); err != nil {
		return nil, err
	}
	return keys.WithPrefix(p.items, prefix), nil
}

func (p *player) NowMs() uint64 {
	l, err := p.expect("clock", map[string]string{})
	if err != nil {
		return 0
	}
	var c struct{ U64 string }
	if json.Unmarshal(l["clock"], &c) != nil {
		p.diverge("a malformed clock line")
		return 0
	}
	v, err := strconv.ParseUint(c.U64, 10, 64)
	if err != nil {
		p.diverge("a malformed clock line")
	}
	return v
}

// Run executes script (JSON lines) on rt and writes the raw results to out.
// A *Failure means exit 1.
func Run(rt *sc.Runtime, script []byte, out io.Writer) error {
	p := &player{items: map[string][]byte{}}
	for i, text := range bytes.Split(script, []byte("\n")) {
		if len(bytes.TrimSpace(text)) == 0 {
			continue
		}
		var l line
		if err := json.Unmarshal(text, &l); err != nil {
			return &Failure{fmt.Sprintf("script line %d: %v", i+1, err)}
		}
		p.lines = append(p.lines, l)
	}
	e := &executor{p: p, rt: rt, coordinators: map[int64]*sc.Coordinator{}, writers: map[int64]*sc.Writer{}}
	defer e.free()
	var buf bytes.Buffer
	for p.pos < len(p.lines) {
		l := p.lines[p.pos]
		if l["call"] == nil {
			return &Failure{fmt.Sprintf("script line %d: the component did not make the import call %s", p.pos+1, show(l))}
		}
		p.pos++
		var name string
		var args []json.RawMessage
		if json.Unmarshal(l["call"], &name) != nil || json.Unmarshal(l["args"], &args) != nil {
			return &Failure{fmt.Sprintf("script line %d: a malformed call line", p.pos)}
		}
		value, err := e.invoke(name, l["h"], args)
		if p.divergence != "" {
			return &Failure{p.divergence}
		}
		var raw any
		var ce sc.CoordinatorError
		var trap *sc.TrapError
		var bad *argError
		switch {
		case errors.As(err, &bad):
			return &Failure{fmt.Sprintf("script line %d: %s: %v", p.pos, name, bad.err)}
		case errors.As(err, &trap):
			return &Failure{fmt.Sprintf("script line %d: %s trapped: %v", p.pos, name, trap.Cause)}
		case errors.As(err, &ce):
			raw = map[string]any{"err": map[string]any{"kind": ce.Kind().String(), "message": ce.Detail()}}
		case err != nil:
			return &Failure{fmt.Sprintf("script line %d: %s failed: %v", p.pos, name, err)}
		default:
			raw = map[string]any{"ok": value}
		}
		b, err := json.Marshal(raw)
		if err != nil {
			return &Failure{err.Error()}
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	_, err := out.Write(buf.Bytes())
	return err
}
