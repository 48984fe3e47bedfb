package sinkcoord

import (
	"encoding/binary"
	"fmt"
	"unicode/utf8"

	"github.com/tetratelabs/wazero/api"
)

var le = binary.LittleEndian

// lifter reads results out of guest memory (layouts: docs/embedding.md
// section 4). A read outside memory does not panic: it records the first
// problem and yields zero, and the call then fails with a TrapError.
type lifter struct {
	mem api.Memory
	err error
}

func (l *lifter) fail(format string, args ...any) {
	if l.err == nil {
		l.err = fmt.Errorf(format, args...)
	}
}

// read is one fixed-size value at p by get (a wazero Memory reader).
func read[T any](l *lifter, p uint32, get func(uint32) (T, bool)) T {
	v, ok := get(p)
	if !ok {
		l.fail("a result at %d is outside memory", p)
	}
	return v
}

func (l *lifter) u8(p uint32) uint8   { return read(l, p, l.mem.ReadByte) }
func (l *lifter) u32(p uint32) uint32 { return read(l, p, l.mem.ReadUint32Le) }
func (l *lifter) u64(p uint32) uint64 { return read(l, p, l.mem.ReadUint64Le) }

func (l *lifter) bool(p uint32) bool {
	switch l.u8(p) {
	case 0:
		return false
	case 1:
		return true
	}
	l.fail("a bool at %d is neither 0 nor 1", p)
	return false
}

// view is n elements of size bytes at ptr (a list), or nil after a failure.
func (l *lifter) view(ptr, n, size uint32) []byte {
	total := uint64(n) * uint64(size)
	if total > 1<<32-1 {
		l.fail("a list of %d elements does not fit memory", n)
		return nil
	}
	b, ok := l.mem.Read(ptr, uint32(total))
	if !ok {
		l.fail("a list at %d (%d bytes) is outside memory", ptr, total)
		return nil
	}
	return b
}

func (l *lifter) bytes(p uint32) []byte {
	v := l.view(l.u32(p), l.u32(p+4), 1)
	if v == nil {
		return nil
	}
	return append([]byte{}, v...) // copied: guest memory is freed by post-return
}

func (l *lifter) str(p uint32) string {
	v := l.view(l.u32(p), l.u32(p+4), 1)
	if !utf8.Valid(v) {
		l.fail("a string at %d is not UTF-8", p)
	}
	return string(v)
}

func (l *lifter) strings(p uint32) []string {
	ptr, n := l.u32(p), l.u32(p+4)
	if l.view(ptr, n, 8) == nil {
		return nil
	}
	out := make([]string, n)
	for i := range n {
		out[i] = l.str(ptr + 8*i)
	}
	return out
}

func (l *lifter) u64s(p uint32) []uint64 {
	v := l.view(l.u32(p), l.u32(p+4), 8)
	out := make([]uint64, len(v)/8)
	for i := range out {
		out[i] = le.Uint64(v[8*i:])
	}
	return out
}

// optU64 is option<u64> (also s64) at p: discriminant, value at p+8.
func (l *lifter) optU64(p uint32) *uint64 {
	switch l.u8(p) {
	case 0:
		return nil
	case 1:
		v := l.u64(p + 8)
		return &v
	}
	l.fail("an option at %d has discriminant %d", p, l.u8(p))
	return nil
}

func (l *lifter) optS64(p uint32) *int64 {
	v := l.optU64(p)
	if v == nil {
		return nil
	}
	s := int64(*v)
	return &s
}

func (l *lifter) lifecycle(p uint32) Lifecycle {
	v := l.u8(p)
	if int(v) >= len(lifecycleNames) {
		l.fail("a lifecycle at %d is %d", p, v)
	}
	return Lifecycle(v)
}

// callError is the error record at p (kind u8, message at +4).
func (l *lifter) callError(p uint32) error {
	kind := l.u8(p)
	if kind > uint8(KindCorruptState) {
		l.fail("an error kind at %d is %d", p, kind)
		return nil
	}
	return newCallError(ErrorKind(kind), l.str(p+4))
}

// outcome (48 bytes, align 8) at p.
func (l *lifter) outcome(p uint32) Outcome {
	return Outcome{
		State:           l.lifecycle(p),
		Committed:       l.u64s(p + 4),
		TagsCreated:     l.strings(p + 12),
		TagsDeleted:     l.strings(p + 20),
		RestartRequired: l.bool(p + 28),
		CommittedUpTo:   l.optU64(p + 32),
	}
}

// entry (40 bytes, align 8) at p.
func (l *lifter) entry(p uint32) Entry {
	ptr, n := l.u32(p+8), l.u32(p+12)
	var committables [][]byte
	if l.view(ptr, n, 8) != nil {
		committables = make([][]byte, n)
		for i := range n {
			committables[i] = l.bytes(ptr + 8*i)
		}
	}
	return Entry{Checkpoint: l.u64(p), Committables: committables, Watermark: l.optS64(p + 16), Savepoint: l.bool(p + 32)}
}

// snapshot (56 bytes, align 8) at p.
func (l *lifter) snapshot(p uint32) Snapshot {
	ptr, n := l.u32(p+48), l.u32(p+52)
	var committables []Committable
	if l.view(ptr, n, 12) != nil {
		committables = make([]Committable, n)
		for i := range n {
			e := ptr + 12*i
			committables[i] = Committable{Subtask: l.u32(e), Bytes: l.bytes(e + 4)}
		}
	}
	return Snapshot{
		ID: l.u64(p), CommitUser: l.str(p + 8), Identifier: l.u64(p + 16),
		Watermark: l.optS64(p + 24), TimeMs: l.u64(p + 40), Committables: committables,
	}
}

// tag (48 bytes, align 8) at p.
func (l *lifter) tag(p uint32) Tag {
	return Tag{
		Name: l.str(p), SnapshotID: l.u64(p + 8), Identifier: l.u64(p + 16),
		CreateTimeMs: l.u64(p + 24), ExpireTimeMs: l.optU64(p + 32),
	}
}

// batchOutcome (56 bytes, align 8) at p: state @0, committed-up-to
// option<u64> @8, effects option<batch-effects> @24 (payload @28:
// committed, tags-created, tags-deleted lists, restart-required @24+28).
func (l *lifter) batchOutcome(p uint32) BatchOutcome {
	out := BatchOutcome{State: l.lifecycle(p), CommittedUpTo: l.optU64(p + 8)}
	switch l.u8(p + 24) {
	case 0:
	case 1:
		e := p + 28
		out.Effects = &BatchEffects{
			Committed: l.u64s(e), TagsCreated: l.strings(e + 8), TagsDeleted: l.strings(e + 16),
			RestartRequired: l.bool(e + 24),
		}
	default:
		l.fail("an option at %d has discriminant %d", p+24, l.u8(p+24))
	}
	return out
}
